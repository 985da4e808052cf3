"""A GPU that fell off the bus: NVIDIA GPUs /sys/bus/pci/devices lists and NVML does not (exit 31)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import hosts
from tfdist_validate.checks.health import missing_from_nvml
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host import pci
from tfdist_validate.host.gpus import Gpu
from tfdist_validate.host.runtime import read_runtime

BUS_IDS = hosts.table_bus_ids(hosts.H100X8_TABLE)


def test_bus_ids_come_from_the_real_table() -> None:
    assert BUS_IDS[0] == "00000000:8D:00.0" and BUS_IDS[-1] == "00000000:B7:00.0" and len(BUS_IDS) == 8


def test_reads_nvidia_display_controllers_only(tmp_path: Path) -> None:
    tree = hosts.sys_pci_gpus(hosts.HostTree(tmp_path), BUS_IDS[:2])
    # the same board's HDMI audio function (class 0x0403) and another vendor's VGA controller are not GPUs
    tree.file("/sys/bus/pci/devices/0000:8d:00.1/vendor", "0x10de\n")
    tree.file("/sys/bus/pci/devices/0000:8d:00.1/class", "0x040300\n")
    tree.file("/sys/bus/pci/devices/0000:03:00.0/vendor", "0x1a03\n")
    tree.file("/sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n")
    tree.file("/sys/bus/pci/devices/0000:04:00.0/vendor", "0x10de\n")
    tree.file("/sys/bus/pci/devices/0000:04:00.0/class", "0x030000\n")  # a GeForce: VGA class
    assert pci.nvidia_gpus(tmp_path) == ("0000:04:00.0", "0000:8d:00.0", "0000:91:00.0")


def test_unreadable_sys_is_unknown(tmp_path: Path) -> None:
    assert pci.nvidia_gpus(tmp_path) is None


def test_nvml_bus_id_in_sysfs_spelling() -> None:
    assert pci.same_address("00000000:B7:00.0") == "0000:b7:00.0"


def _gpus(ids: list[str | None]) -> tuple[Gpu, ...]:
    return tuple(Gpu(index=i, pci_bus_id=b) for i, b in enumerate(ids))


@pytest.mark.parametrize(
    ("nvml_ids", "kind", "missing"),
    [
        (BUS_IDS, "host", []),
        (BUS_IDS[:-1], "host", ["0000:b7:00.0"]),
        (
            [BUS_IDS[0], BUS_IDS[2]],
            "host",
            ["0000:91:00.0", "0000:99:00.0", "0000:ab:00.0", "0000:af:00.0", "0000:b3:00.0", "0000:b7:00.0"],
        ),
        (BUS_IDS[:-1], "docker", []),  # a container's /sys shows the host's GPUs, NVML only its own
        ([*BUS_IDS[:-2], None], "host", []),  # a bus id NVML did not give: nothing to compare
    ],
)
def test_missing_from_nvml(tmp_path: Path, nvml_ids: list[str | None], kind: str, missing: list[str]) -> None:
    hosts.hgx_h100_host(tmp_path)
    facts = replace(read_runtime(tmp_path, {}), kind=kind)
    assert missing_from_nvml(_gpus(nvml_ids), facts) == missing


def test_one_gpu_off_the_bus_is_31(tmp_path: Path) -> None:
    host = hosts.hgx_h100_host(tmp_path / "root")
    probes = hosts.probes(hosts.nvml_h100x8_one_missing(), hosts.SMI_MISSING, hosts.recorded_tf(gpus=7))
    run = hosts.run_check(host, probes, tmp_path)
    assert run.code == ExitCode.GPU_UNHEALTHY
    health = next(c for c in run.report["checks"] if c["id"] == "health.gpus")
    assert "0000:b7:00.0" in health["summary"] and "nvidia-smi -r" in health["hint"]


def test_all_gpus_listed_is_healthy(tmp_path: Path) -> None:
    host = hosts.hgx_h100_host(tmp_path / "root")
    fake = hosts.nvml_h100x8_r535()
    fake.devices = [{**d, "pci.bus_id": b} for d, b in zip(fake.devices, BUS_IDS, strict=True)]  # type: ignore[dict-item]
    run = hosts.run_check(host, hosts.probes(fake, hosts.SMI_MISSING, hosts.recorded_tf(gpus=8)), tmp_path)
    health = next(c for c in run.report["checks"] if c["id"] == "health.gpus")
    assert health["code"] == 0
