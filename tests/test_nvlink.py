"""NVLink links and their error counters: NVML through the probe boundary (a real `nvidia-smi nvlink -s`
capture of an 8x A100 SXM host), and the health layer's judgment of them."""

from __future__ import annotations

import pynvml
import pytest

import hosts
from tfdist_validate.checks.health import nvlink_problems
from tfdist_validate.codec import load
from tfdist_validate.host.gpus import Gpu
from tfdist_validate.probes import nvml


def test_the_a100_capture_has_twelve_active_links_per_gpu() -> None:
    snapshot = nvml.collect(hosts.nvml_a100x8_nvlink())
    assert [g.name for g in snapshot.gpus] == ["NVIDIA A100-SXM4-80GB"] * 8
    assert {g.nvlink_links for g in snapshot.gpus} == {("active",) * 12}
    assert all(g.nvlink_errors == {} and g.error is None for g in snapshot.gpus)  # no counters: not reported


def test_a_down_link_and_counted_errors_are_read_per_link() -> None:
    fake = hosts.nvml_a100x8_nvlink({0: 11}, {0: '{"2": {"crc_data": 3}}'})
    gpu = nvml.collect(fake).gpus[0]
    assert gpu.nvlink_links == ("active",) * 11 + ("inactive",)
    assert gpu.nvlink_errors["2"] == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 3}
    assert "11" not in gpu.nvlink_errors  # a down link's counters are not read


def test_gpu_without_nvlink_has_none() -> None:
    gpu = nvml.collect(hosts.nvml_old_driver()).gpus[0]  # a T4: NOT_SUPPORTED on link 0
    assert (gpu.nvlink_links, gpu.nvlink_errors, gpu.error) == (None, {}, None)


class _Raising(hosts.FakeNvml):
    raised: Exception

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if link == 1:
            raise self.raised
        return super().nvmlDeviceGetNvLinkState(h, link)


def _with(raised: Exception) -> Gpu:
    fake = hosts.nvml_a100x8_nvlink()
    one = _Raising(devices=fake.devices[:1])
    one.raised = raised
    return nvml.collect(one).gpus[0]


def test_a_binding_that_raises_leaves_the_gpu_readable() -> None:
    gpu = _with(pynvml.NVMLLibraryMismatchError("Unversioned function called"))
    assert (gpu.error, gpu.nvlink_links) == (None, ("active",))
    assert "NVMLLibraryMismatchError" in gpu.query_errors["nvmlDeviceGetNvLinkState"]


def test_an_nvml_error_on_a_link_is_recorded_not_fatal() -> None:
    gpu = _with(pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN))
    assert (gpu.error, gpu.nvlink_links) == (None, ("active",))
    assert gpu.query_errors["nvmlDeviceGetNvLinkState"].startswith("link 1: NVMLError_Unknown")


def test_a_lost_gpu_is_the_gpu_error() -> None:
    gpu = _with(pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST))
    assert gpu.error is not None and "GpuIsLost" in gpu.error


@pytest.mark.parametrize(
    ("links", "errors", "found"),
    [
        (("active",) * 12, {}, []),
        (("inactive",) * 12, {}, []),  # a PCIe card without a bridge: not judged
        (None, {}, []),
        (("active", "inactive", "inactive"), {}, ["GPU 0: NVLink 1 of 3 links active (down: link 1, 2)"]),
        (("active",), {"0": {"replay": 0, "crc_flit": 0}}, []),
        (("active",), {"0": {"recovery": 2}}, ["GPU 0: NVLink errors since the driver loaded: 2 recovery"]),
    ],
)
def test_what_health_warns_about(
    links: tuple[str, ...] | None, errors: dict[str, dict[str, int]], found: list[str]
) -> None:
    assert nvlink_problems(Gpu(index=0, nvlink_links=links, nvlink_errors=errors))[0] == found


def test_a_report_before_nvlink_facts_loads() -> None:
    gpu = load(Gpu, {"index": 0, "name": "NVIDIA H100 80GB HBM3"})
    assert (gpu.nvlink_links, gpu.nvlink_errors) == (None, {})
    assert load(Gpu, gpu.to_json()) == gpu
