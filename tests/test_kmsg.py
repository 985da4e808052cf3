"""The kernel-log reader (host/kmsg.py): Xid / SXid events since boot from /dev/kmsg under --root, never
hanging on a device that has no end of file, and saying once when the log is not readable."""

from __future__ import annotations

import os
from pathlib import Path

from tfdist_validate.diagnose import diagnose
from tfdist_validate.host.kmsg import XID_CATALOGUE, parse_events, read_kernel_log

# Real dmesg lines from an NVSwitch host (https://sulao.cn/post/1165; tests/fixtures/logs/SOURCES.md).
HGX = Path(__file__).parent / "fixtures" / "logs" / "hgx-sxid-xid-94-137_sulao-1165.log"
# Real line: https://github.com/NVIDIA/gpu-operator/issues/1146
XID_48 = (
    "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE)"
    " has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1."
)


def _root_with_kmsg(tmp_path: Path, text: str) -> Path:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kmsg").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_saved_kernel_log_gives_each_xid_and_sxid_with_its_meaning(tmp_path: Path) -> None:
    log = read_kernel_log(_root_with_kmsg(tmp_path, HGX.read_text(encoding="utf-8")))
    assert log.readable and not log.cut
    assert [(e.kind, e.number) for e in log.events] == [
        ("SXid", 12028),
        ("SXid", 12028),
        ("SXid", 12028),
        ("Xid", 94),
        ("Xid", 137),
        ("Xid", 137),
        ("Xid", 137),
        ("Xid", 137),
        ("Xid", 94),
        ("Xid", 94),
        ("SXid", 12028),
    ]
    assert log.count == 11
    assert log.events[3].device == "0000:cb:00"
    assert log.events[3].meaning == "contained ECC error" and not log.events[3].fatal
    assert log.events[2].fatal is False  # "Non-fatal" SXid
    assert log.events[4].meaning == XID_CATALOGUE[137][0]


def test_kmsg_records_are_read_past_their_prefix(tmp_path: Path) -> None:
    # /dev/kmsg's own record format: "prio,seq,usec,flags;message"
    log = read_kernel_log(_root_with_kmsg(tmp_path, f"3,1442,219470994,-;{XID_48}\n6,1443,219471000,-;ok\n"))
    assert [(e.kind, e.number, e.device, e.fatal) for e in log.events] == [("Xid", 48, "0000:07:00", True)]
    assert log.events[0].line == XID_48
    assert log.events[0].meaning == "double-bit (uncorrectable) ECC error"


def test_an_unreadable_kernel_log_is_said_once_not_an_error(tmp_path: Path) -> None:
    log = read_kernel_log(tmp_path)
    assert not log.readable and log.events == ()
    assert "not readable here" in log.note and "Xid history unknown" in log.note


def test_a_device_with_no_end_of_file_is_read_until_eagain(tmp_path: Path) -> None:
    """A FIFO with a writer still open behaves like /dev/kmsg: a blocking read would wait for ever."""
    (tmp_path / "dev").mkdir()
    fifo = tmp_path / "dev" / "kmsg"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(writer, f"3,1,1,-;{XID_48}\n".encode())
        log = read_kernel_log(tmp_path, deadline_s=3600)
    finally:
        os.close(writer)
    assert log.readable and not log.cut
    assert [e.number for e in log.events] == [48]


def test_the_size_bound_cuts_the_read_and_says_so(tmp_path: Path) -> None:
    text = HGX.read_text(encoding="utf-8") * 40  # about 80 KiB
    log = read_kernel_log(_root_with_kmsg(tmp_path, text), max_bytes=10_000, deadline_s=3600)
    assert log.cut and "cut short" in log.note
    assert 0 < log.count < 40 * 11


def test_lines_without_an_xid_give_no_event() -> None:
    assert parse_events(["NVRM: GPU Board Serial Number: 1652724066231", "DMAR: IOMMU enabled"]) == ([], 0)


def test_diagnose_names_the_nvlink_sxid_and_ecc_causes_of_the_same_log() -> None:
    result = diagnose(HGX.read_text(encoding="utf-8"))
    assert {"nvswitch-sxid", "nvlink-error", "gpu-xid-memory"} <= {f.signature.id for f in result.findings}
    assert int(result.code) == 31  # the health layer (ECC) is more fundamental than the collective (40)
