"""Xid and SXid events since boot, read from the kernel log (/dev/kmsg under --root).

The kernel log is readable on a host run as root, or in a privileged pod given the host's /dev/kmsg;
elsewhere it is not, and that is a fact, said once. /dev/kmsg never signals end of file: a blocking read
waits for the next message, so it is opened O_NONBLOCK and read until EAGAIN, under a deadline and a size
bound. Each read returns one record, "prio,seq,usec,flags;message" (Documentation/ABI/testing/dev-kmsg);
a record overwritten while we read is EPIPE, skipped. A regular file (a saved `dmesg`, a test's host tree)
is read to its end under the same bounds.
"""

from __future__ import annotations

import errno
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 8 * 1024 * 1024  # the kernel's ring buffer is 16 KiB to a few MiB
DEADLINE_S = 2.0
MAX_EVENTS = 200  # kept in the facts; the count says how many there were
_READ = 64 * 1024
_RECORD_MAX = 8 * 1024  # /dev/kmsg refuses (EINVAL) a read too small for its next record

# NVRM: Xid (PCI:0000:07:00): 48, pid=...    nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, ...
_EVENT = re.compile(r"\b(?P<kind>S?Xid) \((?:PCI:)?(?P<device>[0-9A-Fa-f:.]+)\): (?P<number>\d+)")

# Xid number -> (meaning, severity); severity "fatal" fails the health layer with --fail-on-health.
# From NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/index.html).
XID_CATALOGUE: dict[int, tuple[str, str]] = {
    13: ("graphics engine exception (usually the application)", "warning"),
    31: ("GPU memory page fault (usually the application)", "warning"),
    43: ("GPU stopped processing (usually the application)", "warning"),
    45: ("preemptive cleanup after an earlier error", "warning"),
    48: ("double-bit (uncorrectable) ECC error", "fatal"),
    61: ("internal micro-controller breakpoint / warning", "warning"),
    62: ("internal micro-controller halt", "fatal"),
    63: ("ECC page retirement or row remapping recorded", "warning"),
    64: ("ECC page retirement or row remapping failure", "fatal"),
    74: ("NVLink error", "fatal"),
    79: ("GPU has fallen off the bus", "fatal"),
    92: ("high single-bit ECC error rate", "warning"),
    94: ("contained ECC error", "warning"),
    95: ("uncontained ECC error", "fatal"),
    119: ("GSP RPC timeout", "fatal"),
    120: ("GSP error", "fatal"),
    137: ("NVLink TLC / FLA error", "warning"),
    144: ("NVLink SAW error", "warning"),
    145: ("NVLink RLW error", "warning"),
    149: ("NVLink NETIR error", "fatal"),
}


@dataclass(frozen=True)
class XidEvent:
    kind: str  # Xid (a GPU) | SXid (an NVSwitch)
    number: int
    device: str  # the PCI address the line names
    line: str  # the message, as logged (cut at 240 characters)

    @property
    def meaning(self) -> str:
        if self.kind == "SXid":
            return "NVSwitch error (see NVIDIA's SXid catalogue)"
        return XID_CATALOGUE.get(self.number, ("not in the catalogue", "warning"))[0]

    @property
    def fatal(self) -> bool:
        if self.kind == "SXid":  # the SXid's own line says Fatal / Non-fatal; its Data lines say neither
            return re.search(r"(?<!non-)\bfatal\b", self.line, re.IGNORECASE) is not None
        return XID_CATALOGUE.get(self.number, ("", "warning"))[1] == "fatal"


@dataclass(frozen=True)
class KernelLog:
    readable: bool
    note: str  # why it is not readable, or what was read ("/dev/kmsg, 4211 records")
    events: tuple[XidEvent, ...] = ()
    count: int = 0  # events found; more than len(events) when capped
    cut: bool = False  # the deadline or the size bound stopped the read


def parse_events(lines: list[str]) -> tuple[list[XidEvent], int]:
    kept: list[XidEvent] = []
    count = 0
    for raw in lines:
        message = raw.split(";", 1)[1] if re.match(r"\d+,\d+,\d+,[^;]*;", raw) else raw
        found = _EVENT.search(message)
        if found is None:
            continue
        count += 1
        if len(kept) < MAX_EVENTS:
            kind, number = found["kind"], int(found["number"])
            kept.append(XidEvent(kind, number, found["device"].lower(), message.strip()[:240]))
    return kept, count


def read_kernel_log(root: Path, max_bytes: int = MAX_BYTES, deadline_s: float = DEADLINE_S) -> KernelLog:
    path = root / "dev/kmsg"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        return KernelLog(False, f"{path} is not readable here ({err.strerror or err}): Xid history unknown")
    chunks: list[bytes] = []
    total, cut = 0, False
    stop = time.monotonic() + deadline_s
    try:
        while True:
            if total >= max_bytes or time.monotonic() >= stop:
                cut = True
                break
            try:
                data = os.read(fd, min(_READ, max(max_bytes - total, _RECORD_MAX)))
            except BlockingIOError:  # EAGAIN: every record so far has been read
                break
            except OSError as err:
                if err.errno == errno.EPIPE:  # a record was overwritten while we read: go on
                    continue
                return KernelLog(False, f"{path} could not be read ({err.strerror}): Xid history unknown")
            if not data:  # a regular file's end
                break
            chunks.append(data)
            total += len(data)
    finally:
        os.close(fd)
    lines = b"".join(chunks).decode("utf-8", errors="replace").splitlines()
    events, count = parse_events(lines)
    note = f"{path}: {len(lines)} lines" + (" (cut short by the time or size bound)" if cut else "")
    return KernelLog(True, note, tuple(events), count, cut)
