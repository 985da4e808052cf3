"""The NVSwitch fabric (exit 14): NVML's fabric state through the probe boundary, and the driver layer's
judgment of it, over named scenarios built from recorded outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pynvml
import pytest

import hosts
from tfdist_validate.checks import fabric
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.gpus import NA, Gpu
from tfdist_validate.host.runtime import read_runtime
from tfdist_validate.probes import nvml


@pytest.mark.parametrize(
    ("state", "status", "shown_state", "shown_status"),
    [
        ("Completed", "Success", "Completed", "Success"),  # the H100 capture's Fabric section
        ("In Progress", "[N/A]", "In Progress", NA),  # fabric manager dead at boot (NVSentinel#883)
        ("Not Started", "[N/A]", "Not Started", NA),
        ("Not Supported", "[N/A]", "Not Supported", NA),  # a PCIe H100 (gpud#1147)
        ("Completed", "Unknown Error", "Completed", f"NVML error {pynvml.NVML_ERROR_UNKNOWN}"),
    ],
)
def test_probe_reads_the_fabric_state(state: str, status: str, shown_state: str, shown_status: str) -> None:
    fake = hosts.nvml_h100s(1)
    fake.devices = [{**fake.devices[0], "fabric.state": state, "fabric.status": status}]  # type: ignore[dict-item]
    gpu = nvml.collect(fake).gpus[0]
    assert (gpu.fabric_state, gpu.fabric_status) == (shown_state, shown_status)


def test_the_h100_capture_reports_a_completed_fabric() -> None:
    gpu = nvml.collect(hosts.nvml_h100s(1)).gpus[0]  # its fabric.state / fabric.status columns
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")


def test_gpu_without_fabric_query_is_na() -> None:
    gpu = nvml.collect(hosts.nvml_old_driver()).gpus[0]  # a T4 capture has no fabric: NOT_SUPPORTED
    assert (gpu.fabric_state, gpu.fabric_status, gpu.error) == (NA, NA, None)


class _Without(hosts.FakeNvml):
    """A binding or driver without the versioned fabric call: the unversioned one (R535) answers."""

    nvmlDeviceGetGpuFabricInfoV = None  # type: ignore[assignment]


class _Raising(hosts.FakeNvml):
    def nvmlDeviceGetGpuFabricInfoV(self, h: int, info: Any) -> int:
        raise pynvml.NVMLLibraryMismatchError(
            "Unversioned function called and the pyNVML version does not match"
        )

    def nvmlDeviceGetGpuFabricInfo(self, h: int, info: Any) -> int:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)


def _one(cls: type[hosts.FakeNvml], state: str = "In Progress") -> Gpu:
    base = hosts.nvml_h100x8_fabric(state)
    fake = cls(base.driver, base.cuda, base.devices[:1])
    return nvml.collect(fake).gpus[0]


def test_unversioned_call_is_the_fallback() -> None:
    assert _one(_Without).fabric_state == "In Progress"


def test_a_call_that_raises_leaves_the_gpu_readable() -> None:
    gpu = _one(_Raising)
    assert (gpu.fabric_state, gpu.error, gpu.name) == (NA, None, "NVIDIA H100 80GB HBM3")
    assert "NVMLLibraryMismatchError" in gpu.query_errors["nvmlDeviceGetGpuFabricInfoV"]


def _gpu(index: int, state: str = NA, status: str = NA) -> Gpu:
    return Gpu(index=index, name="NVIDIA H100 80GB HBM3", fabric_state=state, fabric_status=status)


@pytest.mark.parametrize(
    ("gpus", "failing"),
    [
        ((_gpu(0, "Completed", "Success"), _gpu(1, "Completed", "Success")), []),
        ((_gpu(0, "In Progress"), _gpu(1, "Completed", "Success")), [0]),
        ((_gpu(0, "Not Started"), _gpu(1, "Not Started")), [0, 1]),
        ((_gpu(0, "Completed", "NVML error 999"),), [0]),
        ((_gpu(0, "Not Supported"), _gpu(1)), []),  # no fabric (PCIe) or no query (A100): not judged
    ],
)
def test_which_gpus_are_not_ready(gpus: tuple[Gpu, ...], failing: list[int]) -> None:
    assert [g.index for g in fabric.not_ready(gpus)] == failing
    assert (fabric.failure(gpus, None) is None) == (not failing)


def test_nvswitch_nodes_without_fabric_state_get_a_note(tmp_path: Path) -> None:
    host = hosts.hgx_h100_fabric_manager_stopped(tmp_path)
    facts = read_runtime(host.root, host.env)
    assert facts.nvswitches == tuple(f"/dev/nvidia-nvswitch{i}" for i in range(4))
    note = fabric.note((_gpu(0), _gpu(1)), facts)
    assert note and "4 NVSwitch" in note and "802" in note
    assert fabric.note((_gpu(0, "Completed", "Success"),), facts) is None


def test_no_nvswitch_no_note(tmp_path: Path) -> None:
    listing = "ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt"
    hosts.HostTree(tmp_path).dev_from_ls(listing, lambda n: "nvswitch" not in n)
    facts = read_runtime(tmp_path, {})
    assert facts.nvswitches == ()
    assert fabric.note((_gpu(0),), facts) is None


def test_stopped_fabric_manager_is_exit_14(tmp_path: Path) -> None:
    host = hosts.hgx_h100_fabric_manager_stopped(tmp_path / "root")
    probes = hosts.probes(
        hosts.nvml_h100x8_fabric("In Progress"), hosts.SMI_MISSING, hosts.recorded_tf(gpus=0)
    )
    run = hosts.run_check(host, probes, tmp_path)
    assert run.code == ExitCode.FABRIC_NOT_READY
    driver = next(c for c in run.report["checks"] if c["id"] == "driver.nvml")
    assert "GPU 0, 1, 2, 3, 4, 5, 6, 7: In Progress" in driver["summary"]
    assert "nvidia-fabricmanager" in driver["hint"] and "NMX" in driver["hint"]
    assert run.report["host"]["gpus"][0]["fabric_state"] == "In Progress"


def test_completed_fabric_passes_the_driver_layer(tmp_path: Path) -> None:
    host = hosts.hgx_h100_fabric_manager_stopped(tmp_path / "root")
    fake = hosts.nvml_h100x8_fabric("Completed")
    fake.devices = [{**d, "fabric.status": "Success"} for d in fake.devices]  # type: ignore[dict-item]
    run = hosts.run_check(host, hosts.probes(fake, hosts.SMI_MISSING, hosts.recorded_tf(gpus=8)), tmp_path)
    driver = next(c for c in run.report["checks"] if c["id"] == "driver.nvml")
    assert driver["code"] == 0
