"""The fact readers and rules under the host checks, on real recorded outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pynvml
import pytest

import hosts
from tfdist_validate.host.cuda_compat import coverage, driver_runs_cuda
from tfdist_validate.host.gpus import NA
from tfdist_validate.host.runtime import cuda_mask, parse_proc_driver_version, read_runtime
from tfdist_validate.probes import nvidia_smi, nvml

TF_221_BUILD = hosts.recorded_tf().capabilities  # ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']


# ---------------------------------------------------------------- /proc, /dev and the kind of host


@pytest.mark.parametrize(
    ("builder", "kind", "wsl"),
    [
        (hosts.bare_host_no_driver, "host", None),
        (hosts.docker_without_gpus, "docker", None),
        (hosts.podman_without_gpus, "podman", None),
        (lambda r: hosts.kubernetes_pod(r, gpus=True), "kubernetes", None),
        (hosts.wsl2, "host", 2),
        (hosts.wsl1, "host", 1),
    ],
)
def test_runtime_kind(builder, kind: str, wsl: int | None, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    host = builder(tmp_path)
    facts = read_runtime(tmp_path, host.env)
    assert facts.kind == kind
    assert (facts.wsl.version if facts.wsl else None) == wsl


def test_early_wsl2_kernel_without_suffix_is_wsl2(tmp_path: Path) -> None:
    hosts.HostTree(tmp_path).file(
        "/proc/version", hosts.real("proc-version_wsl2_4.19.128-microsoft-standard.txt")
    )
    facts = read_runtime(tmp_path, {})
    assert facts.wsl is not None and facts.wsl.version == 2


def test_toolkit_container_facts(tmp_path: Path) -> None:
    facts = read_runtime(tmp_path, hosts.docker_with_toolkit(tmp_path).env)
    assert facts.gpu_nodes == ("/dev/nvidia0", "/dev/nvidia1")
    assert "/dev/nvidiactl" in facts.control_nodes and "/dev/nvidia-uvm" in facts.control_nodes
    assert facts.kernel_driver_version == "565.57.01"
    assert facts.libraries["libcuda.so.1"] == ("/usr/lib/x86_64-linux-gnu",)


def test_sixteen_gpu_listing_sorts_numerically(tmp_path: Path) -> None:
    hosts.HostTree(tmp_path).dev_from_ls("ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt")
    facts = read_runtime(tmp_path, {})
    assert facts.gpu_nodes[:3] == ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2")
    assert len(facts.gpu_nodes) == 16 and "/dev/nvidia-nvswitch11" in facts.control_nodes


def test_linux_driver_inside_wsl_is_found(tmp_path: Path) -> None:
    hosts.wsl2(tmp_path)
    hosts.HostTree(tmp_path).file("/usr/lib/x86_64-linux-gnu/libcuda.so.1")  # a real file, not WSL's link
    facts = read_runtime(tmp_path, {})
    assert facts.wsl is not None and facts.wsl.shadowing_libcuda == (
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    )


def test_wsl_link_to_its_own_libcuda_is_not_shadowing(tmp_path: Path) -> None:
    hosts.wsl2(tmp_path)
    hosts.HostTree(tmp_path).symlink(
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"
    )
    assert read_runtime(tmp_path, {}).wsl.shadowing_libcuda == ()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fixture", "version"),
    [
        ("proc-driver-nvidia-version_open-x86_64_565.57.01_ubuntu24.04.txt", "565.57.01"),
        ("proc-driver-nvidia-version_open-x86_64_525.60.11_arch.txt", "525.60.11"),
    ],
)
def test_proc_driver_version(fixture: str, version: str) -> None:
    line, found = parse_proc_driver_version(hosts.real(fixture))
    assert found == version and line is not None and line.startswith("NVRM version:")


@pytest.mark.parametrize(
    ("value", "hides"),
    [(None, False), ("0,1", False), ("GPU-00000000-0000-0000-0000-000000000000", False), ("", True),
     ("-1", True), ("-1,0", True), ("NoDevFiles", True)],
)  # fmt: skip
def test_cuda_visible_devices_mask(value: str | None, hides: bool) -> None:
    assert cuda_mask(value).hides_all is hides


# ---------------------------------------------------------------- nvidia-smi


def test_query_parser_on_a_real_noheader_nounits_line() -> None:
    # the --query-gpu list the reporter ran (SOURCES.md)
    fields = [
        "power.limit", "power.min_limit", "power.max_limit", "memory.total", "vbios_version",
        "driver_version", "name", "gpu_uuid", "power.draw", "temperature.gpu", "temperature.memory",
        "clocks.current.graphics", "clocks.sm", "clocks.mem", "utilization.gpu", "utilization.memory",
        "fan.speed", "pcie.link.width.current", "pstate",
    ]  # fmt: skip
    (row,) = nvidia_smi.parse_query(
        hosts.real("nvidia-smi-query-csv-noheader-nounits_rtx2080_440.64.csv"), fields
    )
    assert (
        row["name"] == "GeForce RTX 2080"
        and row["memory.total"] == "7979"
        and row["driver_version"] == "440.64"
    )
    assert row["temperature.memory"] is None  # bare N/A


@pytest.mark.parametrize("fixture", ["N-A", "Not-Supported"])
def test_unsupported_values_are_none(fixture: str) -> None:
    fields = (
        "memory.total,memory.free,memory.used,temperature.gpu,fan.speed,utilization.gpu,utilization.memory"
    )
    text = hosts.real(f"nvidia-smi-query-csv-noheader-nounits_{fixture}_i3pystatus-776.csv")
    (row,) = nvidia_smi.parse_query(text, fields.split(","))
    assert row["fan.speed"] is None and row["memory.total"] == "2004"


def test_snapshot_from_our_query() -> None:
    # our field list, filled from the real H100 capture (the values nvidia-smi prints with nounits)
    device = hosts.query_csv_device("nvidia-smi-query-csv_h100_590.48.01.csv")
    line = ", ".join(device[f] for f in nvidia_smi.QUERY_FIELDS)
    snap = nvidia_smi.snapshot_from_query(line + "\n")
    assert snap.driver_version == "590.48.01" and snap.cuda_version is None
    (gpu,) = snap.gpus
    assert (gpu.name, gpu.memory_total_mib, gpu.compute_capability, gpu.mig_mode) == (
        "NVIDIA H100 80GB HBM3",
        81559.0,
        "9.0",
        "Disabled",
    )


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [
        ("nvidia-smi-error_libnvidia-ml-not-found_container.txt", "library_not_found"),
        ("nvidia-smi-error_no-driver-communication.txt", "driver_not_loaded"),
        ("nvidia-smi-error_driver-library-version-mismatch.txt", "version_mismatch"),
        ("nvidia-smi-error_nvml-unknown-error_container-after-daemon-reload.txt", "unknown"),
    ],
)
def test_nvidia_smi_messages(fixture: str, kind: str) -> None:
    assert nvidia_smi.classify_error(hosts.real(fixture)).kind == kind


# ---------------------------------------------------------------- NVML probe


def test_recorded_pynvml_classes_are_the_installed_ones() -> None:
    record = json.loads(hosts.real("pynvml-error-classes_nvidia-ml-py-13.615.71.json"))
    for entry in record["errors"]:
        error = pynvml.NVMLError(entry["code"])
        assert f"pynvml.{type(error).__name__}" == entry["exception_class"]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "library_not_found"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver_not_loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no_permission"),
        (pynvml.NVML_ERROR_UNKNOWN, "unknown"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "version_mismatch"),
        (pynvml.NVML_ERROR_TIMEOUT, "nvml_error"),
    ],
)
def test_init_errors_become_data(code: int, kind: str) -> None:
    fake = hosts.nvml_failing(code)
    snap = nvml.collect(lib=fake)
    assert snap.error is not None and snap.error.kind == kind and snap.gpus == ()
    assert snap.error.nvml_class == type(pynvml.NVMLError(code)).__name__
    assert fake.calls == ["nvmlInit"]  # nothing to shut down after a failed init


def test_session_is_shut_down_and_old_drivers_fall_back_to_throttle_reasons() -> None:
    fake = hosts.nvml_old_driver()
    snap = nvml.collect(lib=fake)
    assert fake.calls == ["nvmlInit", "nvmlShutdown"]
    (gpu,) = snap.gpus
    assert (snap.driver_version, snap.cuda_version) == ("515.105.01", "11.7")
    assert gpu.clock_event_reasons == ()  # read through nvmlDeviceGetCurrentClocksThrottleReasons
    assert gpu.remapped_rows == dict.fromkeys(("correctable", "uncorrectable", "pending", "failure"), NA)
    assert gpu.compute_capability is None  # not in that -q -x capture: not supported, not a crash


def test_real_pynvml_on_this_gpu_less_machine() -> None:
    """The real binding, lazily loaded: here it cannot find libnvidia-ml.so.1, exactly as recorded."""
    record = json.loads(hosts.real("pynvml-error-classes_nvidia-ml-py-13.615.71.json"))[
        "nvmlInit_without_driver"
    ]
    snap = nvml.collect()
    if snap.error is None:
        pytest.skip("this machine has an NVIDIA driver")
    assert (snap.error.nvml_class, snap.error.message) == (
        record["exception_class"].split(".")[1],
        record["str"],
    )


# ---------------------------------------------------------------- CUDA rules


@pytest.mark.parametrize(
    ("driver", "driver_cuda", "ok", "minor"),
    [
        ("595.71.05", "13.2", True, False),  # newer major: backward compatible
        ("550.144.03", "12.4", True, True),  # 12.4 < 12.5, same major, >= 525.60.13
        ("525.60.11", "12.0", False, False),  # reports 12.0 but is below 525.60.13
        ("515.105.01", "11.7", False, False),  # older major
    ],
)
def test_driver_runs_the_builds_cuda(driver: str, driver_cuda: str, ok: bool, minor: bool) -> None:
    compat = driver_runs_cuda(driver, driver_cuda, "12.5.1")
    assert (compat.ok, compat.minor_compat) == (ok, minor), compat.reason


@pytest.mark.parametrize(
    ("cc", "status", "via"),
    [((8, 0), "native", "sm_80"), ((8, 6), "native", "sm_80"), ((7, 5), "native", "sm_70"),
     ((8, 9), "native", "sm_89"), ((9, 0), "ptx", "compute_90"), ((12, 0), "ptx", "compute_90"),
     ((5, 2), "none", None)],
)  # fmt: skip
def test_compute_capability_coverage(cc: tuple[int, int], status: str, via: str | None) -> None:
    assert (coverage(cc, TF_221_BUILD).status, coverage(cc, TF_221_BUILD).via) == (status, via)


def test_arch_specific_cubins_cover_only_their_own_capability() -> None:
    assert coverage((9, 0), ["sm_90a"]).status == "native"
    assert coverage((10, 0), ["sm_90a"]).status == "none"


def test_a_driver_without_the_v3_process_query_falls_back_to_v2() -> None:
    """pynvml raises NVMLLibraryMismatchError (not an NVMLError) for the unversioned call; _v2 answers."""
    snap = hosts.snapshot(hosts.nvml_busy_without_v3())
    assert snap.error is None
    busy = snap.gpus[0]
    assert busy.processes is not None and len(busy.processes) == 3
    assert busy.query_errors["nvmlDeviceGetComputeRunningProcesses"].startswith("NVMLLibraryMismatchError: ")
    assert snap.gpus[1].processes == ()


def test_the_r535_v3_layout_break_is_avoided_by_reading_v2() -> None:
    """535.43-535.86 write v3 entries into pynvml's v2 array: the probe asks _v2 there and gets the real
    processes (the busy capture's three PIDs), never the misread ones."""
    fake = hosts.nvml_busy_r535_layout_break()
    misread = fake.nvmlDeviceGetComputeRunningProcesses(0)
    real = hosts.nvml_busy().nvmlDeviceGetComputeRunningProcesses(0)
    assert [p.pid for p in misread][1:] != [p.pid for p in real][1:]  # the fake reproduces the garbage
    busy = hosts.snapshot(fake).gpus[0]
    assert busy.processes is not None
    assert [p.pid for p in busy.processes] == [p.pid for p in real]


def test_implausible_process_entries_are_unknown_not_a_finding() -> None:
    """A misread struct on a driver the probe does not know about: entries no kernel or GPU could have."""
    fake = hosts.nvml_busy_r535_layout_break()
    fake.driver = "999.1"  # outside the known range, so the probe trusts _v3 and must judge the values
    busy = hosts.snapshot(fake).gpus[0]
    assert busy.processes is None
    assert busy.query_errors["processes"].startswith("implausible entries (pid, MiB): ")


class _Raising(hosts.FakeNvml):
    """A binding whose calls raise what pynvml never documents: every query must still come back."""

    def __init__(self, broken: str) -> None:
        fake = hosts.nvml_h100s(2)
        super().__init__(fake.driver, fake.cuda, fake.devices)
        self.broken = broken

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        if name == object.__getattribute__(self, "broken"):
            raise_it = lambda *_a: (_ for _ in ()).throw(RuntimeError(f"{name} exploded"))  # noqa: E731
            return raise_it
        return object.__getattribute__(self, name)


@pytest.mark.parametrize(
    "broken",
    [
        "nvmlDeviceGetEccMode",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetRemappedRows",
        "nvmlDeviceGetCudaComputeCapability",
    ],
)
def test_an_optional_query_that_raises_anything_is_na_and_recorded(broken: str) -> None:
    snap = nvml.collect(lib=_Raising(broken))
    assert snap.error is None and [g.error for g in snap.gpus] == [None, None]
    assert snap.gpus[0].query_errors == {broken: f"RuntimeError: {broken} exploded"}
    assert snap.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_a_required_query_that_raises_anything_is_a_fact_not_a_crash() -> None:
    lost = nvml.collect(lib=_Raising("nvmlDeviceGetName"))
    assert [g.error for g in lost.gpus] == ["RuntimeError: nvmlDeviceGetName exploded"] * 2
    fake = _Raising("nvmlSystemGetDriverVersion")
    broken = nvml.collect(lib=fake)
    assert broken.error is not None and broken.error.nvml_class == "RuntimeError"
    assert fake.calls[-1] == "nvmlShutdown"
