"""Peer-to-peer between the GPUs a run uses, the IOMMU and ACS: NVML's P2P status and common ancestor through
the probe boundary (real `nvidia-smi topo -m` captures), the kernel command line under --root (real
/proc/cmdline lines), and the health layer's warnings."""

from __future__ import annotations

from pathlib import Path

import pynvml
import pytest

import hosts
from tfdist_validate.codec import dump, load
from tfdist_validate.host import iommu
from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.host.runtime import read_runtime
from tfdist_validate.probes import nvml

TRANSLATED = "proc-cmdline_intel-iommu-on_5.8.0-36-generic.txt"
PASSTHROUGH = "proc-cmdline_intel-iommu-on-iommu-pt_5.15.0-92-generic.txt"


@pytest.mark.parametrize(
    ("cmdline", "params", "mode"),
    [
        (hosts.real(TRANSLATED), ("intel_iommu=on",), "translated"),
        (hosts.real(PASSTHROUGH), ("intel_iommu=on", "iommu=pt"), "passthrough"),
        ("BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro quiet", (), "not set"),
        ("ro amd_iommu=on", ("amd_iommu=on",), "translated"),
        ("ro intel_iommu=off", ("intel_iommu=off",), "off"),
        (
            "ro iommu.passthrough=1 pci=config_acs=xx",
            ("iommu.passthrough=1", "pci=config_acs=xx"),
            "passthrough",
        ),
    ],
)
def test_iommu_mode_from_the_kernel_command_line(cmdline: str, params: tuple[str, ...], mode: str) -> None:
    assert iommu.kernel_params(cmdline) == params
    assert iommu.mode(params) == mode


def test_runtime_reads_proc_cmdline_under_root(tmp_path: Path) -> None:
    hosts.HostTree(tmp_path).file("/proc/cmdline", hosts.real(TRANSLATED))
    assert read_runtime(tmp_path, {}).kernel_iommu == ("intel_iommu=on",)
    assert read_runtime(tmp_path / "none", {}).kernel_iommu is None  # unreadable: not judged


def test_nvlink_pairs_of_the_a100_host() -> None:
    pairs = nvml.collect(hosts.nvml_a100x8_nvlink()).pairs
    assert len(pairs) == 28 and {p.path for p in pairs} == {"NVLink"}
    assert {(p.p2p_read, p.p2p_write) for p in pairs} == {("OK", "OK")}


def test_a_pcie_pair_names_its_path_and_why_p2p_is_refused() -> None:
    (pair,) = nvml.collect(hosts.nvml_two_over_pcie(pynvml.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED)).pairs
    assert (pair.a, pair.b, pair.topology, pair.p2p_nvlink) == (0, 1, "PHB", "not supported")
    assert (pair.p2p_read, pair.path) == ("chipset not supported", "the CPU (a PCIe host bridge)")


def test_no_p2p_query_is_na_and_one_gpu_has_no_pairs() -> None:
    assert {p.p2p_read for p in nvml.collect(hosts.nvml_two_healthy()).pairs} == {"n/a"}
    assert nvml.collect(hosts.nvml_old_driver()).pairs == ()


def test_a_lost_gpu_in_a_pair_is_that_pairs_error() -> None:
    class Lost(hosts.FakeNvml):
        def nvmlDeviceGetP2PStatus(self, a: int, b: int, index: int) -> int:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    fake = hosts.nvml_two_over_pcie()
    lost = Lost(fake.driver, fake.cuda, fake.devices, topology=fake.topology)
    (pair,) = nvml.collect(lost).pairs
    assert pair.error is not None and "GpuIsLost" in pair.error


def test_a_report_before_pairs_loads() -> None:
    snapshot = load(DriverSnapshot, {"source": "nvml", "driver_version": "595.71.05"})
    assert snapshot.pairs == ()
    full = nvml.collect(hosts.nvml_two_over_pcie(pynvml.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED))
    assert load(DriverSnapshot, dump(full)) == full


def _health(
    tmp_path: Path, fake: hosts.FakeNvml, cmdline: str | None = None, **options: str
) -> hosts.CheckRun:
    host = hosts.docker_with_toolkit(tmp_path / "root")
    if cmdline:
        hosts.HostTree(host.root).file("/proc/cmdline", hosts.real(cmdline))
    return hosts.run_check(
        host, hosts.probes(fake, hosts.SMI_MISSING, hosts.recorded_tf(gpus=2)), tmp_path, **options
    )


def test_refused_p2p_between_run_gpus_warns_and_never_fails(tmp_path: Path) -> None:
    fake = hosts.nvml_two_over_pcie(pynvml.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED)
    run = _health(tmp_path, fake, fail_on_health="true")
    health = run.check("health.gpus")
    assert (run.code, health["status"]) == (0, "warn")
    assert "no peer-to-peer read / write between GPU 0-1 (chipset not supported" in health["summary"]
    assert health["details"]["gpu_pairs"]["GPU 0-1"]["path"] == "the CPU (a PCIe host bridge)"


def test_translated_iommu_warns_passthrough_does_not(tmp_path: Path) -> None:
    health = _health(tmp_path / "a", hosts.nvml_two_over_pcie(), TRANSLATED).check("health.gpus")
    assert health["status"] == "warn" and "IOMMU in translated mode (intel_iommu=on)" in health["summary"]
    assert "iommu=pt" in health["hint"] and "lspci" in health["details"]["acs"]
    health = _health(tmp_path / "b", hosts.nvml_two_over_pcie(), PASSTHROUGH).check("health.gpus")
    assert health["status"] == "pass" and health["details"]["iommu"]["mode"] == "passthrough"
