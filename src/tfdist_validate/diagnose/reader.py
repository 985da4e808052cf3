"""Read a log file or stdin as numbered text lines, in bounded memory, refusing what is not a text log.

Blocks of whole lines are read at a time (scan.py finds the few lines worth matching in them); a log with one
gigantic line (a progress bar that never printed a newline) is cut into CHUNK-sized pieces matched as
continuations with the same line number.
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


BLOCK = 1 << 20  # read size: large enough that Python's per-call cost vanishes, small enough to bound memory


def blocks(stream: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """(number of the block's first line, block) pairs. A block holds whole lines (the last one ends with a
    newline, unless the file does not), except that a line longer than CHUNK is cut into CHUNK-sized pieces
    that all carry its number. Raises UsageError as soon as the first bytes show this is not a text log (the
    caller reports only after the whole log is read, so nothing half-done is shown)."""
    number = 1
    carry = b""
    sniffed = False
    while True:
        try:
            data = stream.read(BLOCK)
        except OSError as err:
            raise UsageError(f"diagnose: cannot read {name}: {err.strerror or err}") from None
        if not sniffed:
            sniffed = True
            problem = _looks_binary(data[:_SNIFF])
            if problem:
                raise UsageError(f"diagnose: {name}: {problem}")
        elif data.count(0) > len(data) // 4:
            raise UsageError(f"diagnose: {name}: binary data after line {number}, not a text log")
        if not data:
            if carry:
                yield number, carry
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # no newline at all: a giant line, matched in pieces that keep its number
            pieces = len(data) // CHUNK
            for i in range(pieces):
                yield number, data[i * CHUNK : (i + 1) * CHUNK]
            carry = data[pieces * CHUNK :]
            continue
        whole, carry = data[:cut], data[cut:]
        yield number, whole
        number += whole.count(b"\n")
