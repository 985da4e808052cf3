"""The kernel log's Xid / SXid history in the health layer (checks/kernel_log.py): a warning by default, 31
with --fail-on-health for fatal Xids, said once where the log is unreadable, and decided again by replay."""

from __future__ import annotations

import json
from pathlib import Path

import hosts
from conftest import run_cli
from tfdist_validate.checks.kernel_log import describe, judge
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.kmsg import KernelLog, parse_events
from tfdist_validate.result import Status, passed

BUS_IDS = hosts.table_bus_ids(hosts.H100X8_TABLE)
# Real dmesg lines from an NVSwitch host (https://sulao.cn/post/1165; tests/fixtures/logs/SOURCES.md).
HGX = Path(__file__).parent / "fixtures" / "logs" / "hgx-sxid-xid-94-137_sulao-1165.log"
# Real line: https://github.com/NVIDIA/gpu-operator/issues/1146
XID_48 = (
    "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE)"
    " has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1."
)


def _log(lines: list[str]) -> KernelLog:
    events, count = parse_events(lines)
    return KernelLog(True, "/dev/kmsg: test", tuple(events), count)


def _healthy_hgx(tmp_path: Path, kmsg: str | None, **options: str) -> hosts.CheckRun:
    host = hosts.hgx_h100_host(tmp_path / "root")
    if kmsg is not None:
        (host.root / "dev").mkdir(exist_ok=True)
        (host.root / "dev" / "kmsg").write_text(kmsg, encoding="utf-8")
    fake = hosts.nvml_h100x8_r535()
    fake.devices = [{**d, "pci.bus_id": b} for d, b in zip(fake.devices, BUS_IDS, strict=True)]  # type: ignore[dict-item]
    probes = hosts.probes(fake, hosts.SMI_MISSING, hosts.recorded_tf(gpus=8))
    return hosts.run_check(host, probes, tmp_path, **options)


def _health(run: hosts.CheckRun) -> dict[str, object]:
    return next(c for c in run.report["checks"] if c["id"] == "health.gpus")


def test_xid_history_is_a_warning_with_the_catalogue_meaning(tmp_path: Path) -> None:
    run = _healthy_hgx(tmp_path, HGX.read_text(encoding="utf-8"))
    health = _health(run)
    assert health["status"] == "warn" and health["code"] == 0
    assert "Xid 94 (contained ECC error) x3" in str(health["summary"])
    assert "SXid 12028 (NVSwitch error (see NVIDIA's SXid catalogue)) x4" in str(health["summary"])
    assert len(health["details"]["xid_events"]) == 11  # type: ignore[index]
    assert "catalogue" in str(health["hint"])


def test_fatal_xid_fails_with_fail_on_health_and_replays_to_the_same_verdict(tmp_path: Path) -> None:
    run = _healthy_hgx(tmp_path, f"3,1442,219470994,-;{XID_48}\n", fail_on_health="true")
    health = _health(run)
    assert run.code == ExitCode.GPU_UNHEALTHY and health["status"] == "fail"
    assert "Xid 48 (double-bit (uncorrectable) ECC error, fatal) x1" in str(health["summary"])
    report = tmp_path / "recorded.json"
    report.write_text(json.dumps(run.report))
    out = tmp_path / "replayed.json"
    replayed = run_cli(["replay", str(report), "--json", str(out)])
    assert replayed.code == ExitCode.GPU_UNHEALTHY, replayed.stderr
    assert _health_of(json.loads(out.read_text()))["summary"] == health["summary"]


def _health_of(report: dict[str, object]) -> dict[str, object]:
    return next(c for c in report["checks"] if c["id"] == "health.gpus")  # type: ignore[attr-defined]


def test_an_unreadable_kernel_log_is_said_once_and_changes_nothing(tmp_path: Path) -> None:
    health = _health(_healthy_hgx(tmp_path, None))
    assert health["status"] == "pass"
    assert "not readable here" in health["details"]["kernel_log"]  # type: ignore[index]
    assert "kernel log" not in str(health["summary"])


def test_a_readable_log_without_xids_says_so(tmp_path: Path) -> None:
    health = _health(_healthy_hgx(tmp_path, "6,1,1,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n"))
    assert health["status"] == "pass"
    assert health["details"]["kernel_log"].endswith("no Xid or SXid since boot")  # type: ignore[index]


def test_a_log_not_recorded_by_an_older_report_is_not_judged() -> None:
    base = passed("8 GPU(s) healthy by NVML")
    assert judge(base, KernelLog(False, "unreadable"), True).status is Status.PASS


def test_warning_xids_never_fail_even_with_fail_on_health() -> None:
    log = _log(HGX.read_text(encoding="utf-8").splitlines())
    assert judge(passed("ok"), log, True).status is Status.WARN
    assert judge(passed("ok"), _log([XID_48]), False).status is Status.WARN


def test_the_description_counts_each_kind_once() -> None:
    assert describe(_log([XID_48, XID_48])) == (
        "kernel log since boot: Xid 48 (double-bit (uncorrectable) ECC error, fatal) x2"
    )
