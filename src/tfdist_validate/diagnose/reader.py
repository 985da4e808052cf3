"""Read a log file or stdin as numbered text lines, in bounded memory, refusing what is not a text log.

Lines are read with a length limit, so a log with one gigantic line (a progress bar that never printed a
newline) still costs at most CHUNK bytes at a time; the rest of such a line is matched as a continuation
with the same line number.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from tfdist_validate.errors import UsageError

CHUNK = 64 * 1024
_SNIFF = 8192
# Control characters that do occur in real logs: tab, newline, carriage return (progress bars), backspace,
# form feed, escape (colours).
_TEXT_CONTROLS = {9, 10, 13, 8, 12, 27}


def _looks_binary(block: bytes) -> str | None:
    if not block:
        return None
    if block[:2] == b"\x1f\x8b":
        return "it is gzip-compressed (decompress it first, e.g. `zcat FILE | tfdist-validate diagnose -`)"
    if b"\x00" in block:
        return f"it contains NUL bytes (offset {block.index(0)}): binary data, not a text log"
    controls = sum(1 for b in block if b < 32 and b not in _TEXT_CONTROLS)
    if controls > len(block) // 20:
        return "it is mostly control characters: binary data, not a text log"
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut at the end of the sniffed block is fine; garbage earlier is not.
        if err.start < len(block) - 4:
            bad = sum(1 for b in block if b >= 128)
            if bad > len(block) // 10:
                return "it is not UTF-8 text: binary data, not a text log"
    return None


def open_log(path: str, stdin: BinaryIO) -> tuple[BinaryIO, str]:
    """The stream to read and the name to show; a UsageError naming the file and the problem otherwise."""
    if path == "-":
        return stdin, "<stdin>"
    try:
        info = os.stat(path)
    except OSError as err:
        raise UsageError(f"diagnose: cannot read {path!r}: {err.strerror or err}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"diagnose: {path!r} is a directory; give a log file (or - for stdin)")
    try:
        return open(path, "rb"), path  # the caller closes it
    except OSError as err:
        raise UsageError(f"diagnose: cannot read {path!r}: {err.strerror or err}") from None


def numbered_lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    """(line number, text) pairs; raises UsageError as soon as the first bytes show this is not a text
    log (the caller reports only after the whole log is read, so nothing half-done is shown)."""
    number = 0
    continuing = False
    sniffed = bytearray()
    while True:
        try:
            raw = stream.readline(CHUNK)
        except OSError as err:
            raise UsageError(f"diagnose: cannot read {name}: {err.strerror or err}") from None
        if len(sniffed) < _SNIFF:
            sniffed += raw[: _SNIFF - len(sniffed)]
            if len(sniffed) >= _SNIFF or not raw:
                problem = _looks_binary(bytes(sniffed))
                if problem:
                    raise UsageError(f"diagnose: {name}: {problem}")
        elif raw.count(0) > len(raw) // 4:
            raise UsageError(f"diagnose: {name}: binary data after line {number}, not a text log")
        if not raw:
            return
        if not continuing:
            number += 1
        continuing = not raw.endswith(b"\n")
        yield number, raw.decode("utf-8", errors="replace")
