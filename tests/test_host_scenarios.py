# ruff: noqa: E501  (the scenario table reads best one case per block)
"""Each kind of host gives its contract exit code, decided by the right check, with the fix for that host.

Table-driven over tests/hosts.py scenarios: trees built from real /proc and /dev outputs, NVML answering from
recorded nvidia-smi captures, TensorFlow's answer recorded from the real probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import jsonschema
import pynvml
import pytest

import hosts
from tfdist_validate.report.schema import SCHEMA

TF = hosts.recorded_tf


@dataclass(frozen=True)
class Case:
    name: str
    host: Callable[[Path], hosts.Host]
    probes: Callable[[list[float]], hosts.ProbeSet]
    code: int
    decided_by: str | None
    hint: tuple[str, ...] = ()  # substrings of the verdict's hint (the fix)
    summary: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)


def p(
    nvml: Callable[[], hosts.FakeNvml] | None = None,
    smi: hosts.Callable = hosts.SMI_MISSING,  # type: ignore[name-defined]
    tf: Callable[[], hosts.TfFacts] | None = None,
) -> Callable[[list[float]], hosts.ProbeSet]:
    return lambda calls: hosts.probes(nvml() if nvml else None, smi, tf() if tf else None, calls)


def err(code: int) -> Callable[[], hosts.FakeNvml]:
    return lambda: hosts.nvml_failing(code)


HEALTHY_2 = p(hosts.nvml_two_healthy, tf=lambda: TF(gpus=2))
CASES = [
    # --- runtime layer: decided from the files under --root alone
    Case("bare host, no driver", hosts.bare_host_no_driver, p(), 10, "runtime.gpu_access",
         ("install the NVIDIA driver", "modprobe nvidia"), ("no NVIDIA driver on this host",)),
    Case("docker without --gpus", hosts.docker_without_gpus, p(), 11, "runtime.gpu_access",
         ("docker run --gpus all", "nvidia-ctk runtime configure --runtime=docker", "systemctl restart docker",
          "deploy.resources.reservations.devices", hosts.real("docker-error_no-gpu-device-driver.txt")[47:90]),
         ("docker container without GPU access", "host's NVIDIA driver 565.57.01 is loaded")),
    Case("docker without --gpus on a host without driver", lambda r: hosts.docker_without_gpus(r, False), p(),
         11, "runtime.gpu_access", ("docker run --gpus all",)),
    Case("podman without CDI device", hosts.podman_without_gpus, p(), 11, "runtime.gpu_access",
         ("--device nvidia.com/gpu=all", "nvidia-ctk cdi generate")),
    Case("kubernetes pod without a GPU limit", lambda r: hosts.kubernetes_pod(r, gpus=False), p(), 11,
         "runtime.gpu_access", ("nvidia.com/gpu", "device plugin"), ("Kubernetes pod without GPU access",)),
    Case("WSL2 without the Windows driver's libraries", lambda r: hosts.wsl2(r, working=False), p(), 12,
         "runtime.gpu_access", ("NVIDIA driver on Windows", "never install a Linux NVIDIA driver inside WSL")),
    Case("WSL1", hosts.wsl1, p(), 12, "runtime.gpu_access", ("wsl --set-version",)),
    # --- driver layer: NVML's error, mapped for this kind of host
    Case("host: kernel module not loaded", hosts.bare_host_with_driver,
         p(err(pynvml.NVML_ERROR_DRIVER_NOT_LOADED), hosts.smi_error("nvidia-smi-error_no-driver-communication.txt", 9)),
         10, "driver.nvml", ("modprobe nvidia",), ("Driver Not Loaded",)),
    Case("host: driver/library version mismatch", hosts.bare_host_with_driver,
         p(err(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
           hosts.smi_error("nvidia-smi-error_driver-library-version-mismatch.txt", 255)),
         10, "driver.nvml", ("reboot",), ("different versions",)),
    Case("host: no permission", hosts.bare_host_with_driver, p(err(pynvml.NVML_ERROR_NO_PERMISSION)), 10,
         "driver.nvml", ("/dev/nvidia*",), ("Insufficient Permissions",)),
    Case("container after systemd daemon-reload", hosts.docker_with_toolkit,
         p(err(pynvml.NVML_ERROR_UNKNOWN),
           hosts.smi_error("nvidia-smi-error_nvml-unknown-error_container-after-daemon-reload.txt", 255)),
         11, "driver.nvml", ("recreate the container", "create-dev-char-symlinks"),
         ("Unknown Error", "nvidia-container-toolkit#48")),
    Case("container without libnvidia-ml", hosts.docker_with_toolkit,
         p(err(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND),
           hosts.smi_error("nvidia-smi-error_libnvidia-ml-not-found_container.txt", 12)),
         11, "driver.nvml", ("--gpus all",), ("NVML Shared Library Not Found",)),
    # --- TensorFlow layer
    Case("healthy docker host with the toolkit, 2 GPUs", hosts.docker_with_toolkit, HEALTHY_2, 0, None),
    Case("Kubernetes pod with 2 GPUs", lambda r: hosts.kubernetes_pod(r, gpus=True), HEALTHY_2, 0, None),
    Case("WSL2 working, 2 GPUs", hosts.wsl2, p(hosts.nvml_wsl2_two_3090, tf=lambda: TF(gpus=2)), 0, None),
    Case("driver too old for the build's CUDA", hosts.docker_with_toolkit,
         p(hosts.nvml_old_driver, tf=lambda: TF(gpus=1)), 13, "tensorflow.driver_compat",
         ("upgrade the host's NVIDIA driver", "525.60.13"), ("supports only CUDA 11.7", "12.5.1")),
    Case("driver sees GPUs, TensorFlow none (real probe record)", hosts.docker_with_toolkit,
         p(hosts.nvml_two_healthy), 22, "tensorflow.gpus_visible", ("tensorflow[and-cuda]==2.21.0",),
         ("the driver sees 2 GPU(s), TensorFlow none", "cuInit")),
    Case("TensorFlow names the library it could not load", hosts.docker_with_toolkit,
         p(hosts.nvml_two_healthy, tf=lambda: TF(log_fixture="tf-log_cannot-dlopen_nvidia-tensorflow-110.txt")),
         22, "tensorflow.gpus_visible", ("CUDA 12.5.1",), ("libcusolver.so.11", "libnvJitLink.so.12")),
    Case("TensorFlow cannot be imported", hosts.docker_with_toolkit,
         p(hosts.nvml_two_healthy,
           tf=lambda: hosts.TfFacts(False, import_error="ModuleNotFoundError: No module named 'tensorflow'")),
         20, "tensorflow.import", ("pip install",), ("No module named 'tensorflow'",)),
    Case("CPU-only TensorFlow build", hosts.docker_with_toolkit,
         p(hosts.nvml_two_healthy, tf=lambda: replace(TF(), built_with_cuda=False, build_info={})),
         21, "tensorflow.cuda_build", ("tensorflow[and-cuda]",), ("built without CUDA",)),
    Case("GPU newer than every cubin and no PTX", hosts.docker_with_toolkit,
         # the recorded 2.21 build list without its compute_90 entry, to exercise the rule on H100s (9.0)
         p(hosts.nvml_h100s, tf=lambda: replace(TF(gpus=2), build_info={
             **TF().build_info, "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89"]})),
         23, "tensorflow.compute_cap", ("sm_90",), ("compute capability 9.0",)),
    Case("H100 on R535 (CUDA 12.2): the build's only code for cc 9.0 is CUDA 12.5 PTX", hosts.docker_with_toolkit,
         p(hosts.nvml_h100x8_r535, tf=lambda: TF(gpus=8)), 13, "tensorflow.driver_compat",
         ("upgrade the host's NVIDIA driver", "CUDA 12.5.1"),
         ("driver 535.161.08 (branch R535)", "only PTX for compute capability 9.0", "UNSUPPORTED_PTX_VERSION")),
    # --- health and count
    Case("ECC errors fail with --fail-on-health", hosts.docker_with_toolkit,
         p(hosts.nvml_ecc_errors, tf=lambda: TF(gpus=2)), 31, "health.gpus", ("nvidia-smi -q -d ECC",),
         ("27 volatile uncorrected ECC errors", "row remapping failed"), {"fail_on_health": "true"}),
    Case("HGX A100, one NVLink link down and CRC errors: 31 with --fail-on-health", hosts.docker_with_toolkit,
         p(lambda: hosts.nvml_a100x8_nvlink({2: 3}, {5: '{"7": {"crc_flit": 4, "replay": 1}}'}),
           tf=lambda: TF(gpus=8)), 31, "health.gpus", ("nvidia-smi nvlink -s", "nvidia-smi nvlink -e"),
         ("GPU 2: NVLink 11 of 12 links active (down: link 3)", "GPU 5: NVLink errors since the driver loaded:"
          " 1 replay, 4 crc flit"), {"fail_on_health": "true"}),
    Case("HGX A100, every NVLink link up and no errors: healthy", hosts.docker_with_toolkit,
         p(hosts.nvml_a100x8_nvlink, tf=lambda: TF(gpus=8)), 0, None, (), (), {"fail_on_health": "true"}),
    Case("lifetime ECC errors only, no remap pending or failed: healthy, the count shown", hosts.docker_with_toolkit,
         p(hosts.nvml_lifetime_ecc_only, tf=lambda: TF(gpus=2)), 0, None, (),
         (), {"fail_on_health": "true"}),
    Case("NVML without ..._v3: pynvml's NVMLLibraryMismatchError, processes read through _v2",
         hosts.docker_with_toolkit, p(hosts.nvml_busy_without_v3, tf=lambda: TF(gpus=2)), 0, None),
    Case("one GPU lost: TensorFlow sees one, --min-gpus 2", hosts.docker_with_toolkit,
         p(hosts.nvml_one_gpu_lost, tf=lambda: TF(gpus=1)), 30, "devices.count", ("--min-gpus",),
         ("1 usable GPU(s) (/gpu:0), fewer than --min-gpus 2",)),
    Case("MIG: one device", hosts.docker_one_gpu, p(hosts.nvml_mig, tf=lambda: TF(gpus=1)), 30, "devices.count"),
    Case("--devices names a GPU that does not exist", hosts.docker_with_toolkit, HEALTHY_2, 30, "devices.count",
         summary=("--devices names /gpu:3",), options={"devices": "/gpu:0,/gpu:3"}),
    Case("CUDA_VISIBLE_DEVICES=-1 hides every GPU", hosts.docker_with_toolkit, p(hosts.nvml_two_healthy), 22,
         "tensorflow.gpus_visible", ("unset CUDA_VISIBLE_DEVICES",), ("hides every GPU",)),
    # --- dry run: GPU layers skipped, the same min-gpus rule on logical CPU devices
    Case("dry run, 1 replica, --min-gpus 2", hosts.docker_without_gpus, p(), 30, "devices.count",
         options={"cpu_replicas": "1"}),
    Case("dry run, 2 replicas in a GPU-less container", hosts.docker_without_gpus, p(), 0, None,
         options={"cpu_replicas": "2"}),
]  # fmt: skip


def _host(case: Case, tmp_path: Path) -> hosts.Host:
    host = case.host(tmp_path / "root")
    if case.name.startswith("CUDA_VISIBLE_DEVICES"):
        host.env["CUDA_VISIBLE_DEVICES"] = "-1"
    return host


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_scenario_gives_its_exit_code_and_fix(case: Case, tmp_path: Path) -> None:
    tf_calls: list[float] = []
    result = hosts.run_check(_host(case, tmp_path), case.probes(tf_calls), tmp_path, **case.options)
    verdict = result.report["verdict"]
    assert (result.code, verdict["check"]) == (case.code, case.decided_by), result.stderr
    for text in case.hint:
        assert text in verdict["hint"]
    for text in case.summary:
        assert text in verdict["summary"]
    jsonschema.validate(result.report, SCHEMA)
    if case.decided_by and case.decided_by.split(".")[0] in ("runtime", "driver", "health"):
        # every verdict below the TensorFlow layer arrives without TensorFlow
        assert tf_calls == []
        assert "visible_gpus=" not in result.stdout


def test_healthy_host_reports_facts_and_the_reference_line(tmp_path: Path) -> None:
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), HEALTHY_2([]), tmp_path)
    assert result.code == 0
    assert result.stdout == "visible_gpus=2\n"
    host = result.report["host"]
    assert host["runtime"]["kind"] == "docker" and host["container"]["engine"] == "docker"
    assert host["driver"] | {"nvidia_smi": None} == {
        "source": "nvml",
        "version": "595.71.05",
        "cuda_version": "13.2",
        "error": None,
        "nvidia_smi": None,
    }
    assert [g["name"] for g in host["gpus"]] == [
        "NVIDIA GeForce RTX 2080 SUPER",
        "NVIDIA GeForce RTX 4080 SUPER",
    ]
    assert [g["compute_capability"] for g in host["gpus"]] == ["7.5", "8.9"]
    assert host["replicas_planned"] == 2 and host["devices"] == ["/gpu:0", "/gpu:1"]
    assert result.report["tensorflow"]["build_info"]["cuda_version"] == "12.5.1"


def test_ptx_only_gpu_passes_with_a_jit_warning(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_h100s(), tf=TF(gpus=2))
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path)
    check = result.check("tensorflow.compute_cap")
    assert result.code == 0 and check["status"] == "warn"
    assert "via PTX compute_90" in check["summary"] and "JIT-compiles" in check["summary"]


def test_health_problems_warn_by_default(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_busy(), tf=TF(gpus=2))
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path)
    check = result.check("health.gpus")
    assert result.code == 0 and check["status"] == "warn"
    assert "3 other process(es) hold 11052 MiB (pid 21180, 21181, 21198)" in check["summary"]


def test_lifetime_ecc_errors_are_information(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_lifetime_ecc_only(), tf=TF(gpus=2))
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path, fail_on_health="true"
    )
    check = result.check("health.gpus")
    assert result.code == 0 and check["status"] == "pass"
    assert "lifetime uncorrected ECC errors {'GPU 1': 805}" in check["summary"]
    assert check["details"]["aggregate_uncorrected_ecc"] == {"GPU 1": 805}


def test_r535_layout_break_names_the_real_processes(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_busy_r535_layout_break(), tf=TF(gpus=2))
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path)
    assert (
        "3 other process(es) hold 11052 MiB (pid 21180, 21181, 21198)"
        in result.check("health.gpus")["summary"]
    )


def test_single_gpu_with_min_gpus_1_warns_one_replica(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_h100s(1), tf=TF(gpus=1))
    result = hosts.run_check(hosts.docker_one_gpu(tmp_path / "root"), probe_set, tmp_path, min_gpus="1")
    check = result.check("devices.count")
    assert result.code == 0 and check["status"] == "warn"
    assert "one replica is valid TensorFlow but not distributed training" in check["summary"]


def test_devices_restricts_the_replicas(tmp_path: Path) -> None:
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), HEALTHY_2([]), tmp_path, devices="1", min_gpus="1"
    )
    assert result.code == 0
    assert result.report["host"]["devices"] == ["/gpu:1"]
    assert result.stdout == "visible_gpus=2\n"  # the reference counts TensorFlow's GPUs, not the selection


def test_mig_is_named_by_the_driver_layer(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_mig(), tf=TF(gpus=1))
    result = hosts.run_check(hosts.docker_one_gpu(tmp_path / "root"), probe_set, tmp_path)
    check = result.check("driver.nvml")
    assert check["status"] == "warn" and "MIG is enabled on GPU 0" in check["summary"]
    # the MIG devices of the real `nvidia-smi -L` listing, as NVML lists them, and which one the run gets
    uuids = hosts.mig_uuids("nvidia-smi-L_h100-mig_590.48.01.txt")
    assert len(uuids) == 4 and result.report["host"]["gpus"][0]["mig_devices"] == uuids
    assert f"its MIG devices: {', '.join(uuids)}; this run uses one of them" in check["summary"]


def test_the_mig_device_cuda_visible_devices_names_is_the_one_the_run_uses(tmp_path: Path) -> None:
    uuids = hosts.mig_uuids("nvidia-smi-L_h100-mig_590.48.01.txt")
    host = hosts.docker_one_gpu(tmp_path / "root")
    host.env["CUDA_VISIBLE_DEVICES"] = f"{uuids[2]},{uuids[0]}"
    result = hosts.run_check(host, hosts.probes(hosts.nvml_mig(), tf=TF(gpus=1)), tmp_path)
    summary = result.check("driver.nvml")["summary"]
    assert f"this run uses {uuids[2]} (the first MIG device CUDA_VISIBLE_DEVICES names)" in summary


def test_lost_gpu_is_data_not_a_crash(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_one_gpu_lost(), tf=TF(gpus=1))
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path)
    assert result.check("driver.nvml")["status"] == "warn"
    assert "GPU 1 is lost (NVMLError_GpuIsLost: GPU is lost)" in result.check("health.gpus")["summary"]
    assert result.report["host"]["gpus"][1]["error"] == "NVMLError_GpuIsLost: GPU is lost"


@pytest.mark.parametrize(
    ("code", "meaning", "unhealthy"),
    [
        # NVML's documented return for a handle this process may not open; no public capture found
        (pynvml.NVML_ERROR_NO_PERMISSION, "is not this container's GPU", False),
        # "Unable to determine the device handle for GPU0000:65:00.0: Unknown Error -- only from container"
        # (NVIDIA/nvidia-container-toolkit#69)
        (pynvml.NVML_ERROR_UNKNOWN, "lost its device access in this container", True),
    ],
)
def test_only_gpu_is_lost_means_lost(tmp_path: Path, code: int, meaning: str, unhealthy: bool) -> None:
    fake = hosts.nvml_h100s(2)
    fake.devices[1] = code
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"),
        hosts.probes(fake, tf=TF(gpus=1)),
        tmp_path,
        min_gpus="1",
    )
    driver = result.check("driver.nvml")
    assert f"GPU 1 {meaning}" in driver["summary"] and "lost GPU needs a reset" not in driver["hint"]
    health = result.check("health.gpus")
    assert (health["status"] == "warn") is unhealthy
    assert ("reset" in health["summary"] + (health["hint"] or "")) is False


@pytest.mark.parametrize(
    ("visible", "says", "never"),
    [
        ("void", "comes from an nvidia-ctk CDI spec", "unset it"),  # nvidia-ctk's spec: containerEdits.env
        ("none", "asks the NVIDIA runtime for no GPU: unset it", "CDI spec"),
    ],
)
def test_nvidia_visible_devices_void_is_cdi_not_a_user_error(
    tmp_path: Path, visible: str, says: str, never: str
) -> None:
    host = hosts.podman_without_gpus(tmp_path / "root")
    host.env["NVIDIA_VISIBLE_DEVICES"] = visible
    result = hosts.run_check(host, hosts.probes(), tmp_path)
    hint = result.check("runtime.gpu_access")["hint"]
    assert result.code == 11 and says in hint and never not in hint


# tf.config.experimental.get_device_details' documented keys (device_name, compute_capability)
_RTX_4080S = {"device_name": "NVIDIA GeForce RTX 4080 SUPER", "compute_capability": [8, 9]}
_RTX_2080S = {"device_name": "NVIDIA GeForce RTX 2080 SUPER", "compute_capability": [7, 5]}


@pytest.mark.parametrize(
    ("details", "code", "status"),
    [
        ([_RTX_4080S], 0, "warn"),  # CUDA_VISIBLE_DEVICES=1: TensorFlow uses the 4080 SUPER alone
        ([_RTX_2080S, _RTX_4080S], 23, "fail"),  # the run uses the unsupported card
    ],
)
def test_compute_capability_is_judged_for_the_gpus_in_use(
    tmp_path: Path, details: list[dict[str, object]], code: int, status: str
) -> None:
    """The 2080 SUPER + 4080 SUPER host, with a build narrowed to sm_80/sm_89/compute_90 so that the 2080
    SUPER (cc 7.5) has no code: it fails the run only if the run uses it."""
    build = {**TF().build_info, "cuda_compute_capabilities": ["sm_80", "sm_89", "compute_90"]}
    tf = replace(TF(gpus=len(details)), build_info=build, gpu_details=tuple(details))
    host = hosts.docker_with_toolkit(tmp_path / "root")
    result = hosts.run_check(host, hosts.probes(hosts.nvml_two_healthy(), tf=tf), tmp_path, min_gpus="1")
    check = result.check("tensorflow.compute_cap")
    assert (result.code, check["status"]) == (code, status)
    assert "GPU 0 (NVIDIA GeForce RTX 2080 SUPER, compute capability 7.5)" in check["summary"]


def test_dry_run_never_asks_tensorflow_to_list_gpus(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_two_healthy(), tf=TF(gpus=2))
    hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path, cpu_replicas="2")
    assert probe_set.tf.listed_gpus == [False]
    probe_set = hosts.probes(hosts.nvml_two_healthy(), tf=TF(gpus=2))
    hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root2"), probe_set, tmp_path)
    assert probe_set.tf.listed_gpus == [True]


def test_the_facts_child_without_gpus_does_not_call_list_physical_devices() -> None:
    from types import SimpleNamespace

    from tfdist_validate.probes import tf_facts

    def cuinit(kind: str) -> list[object]:
        raise AssertionError(f"list_physical_devices({kind!r}) initialises CUDA on the GPUs")

    tf = SimpleNamespace(
        __version__="2.21.0",
        sysconfig=SimpleNamespace(get_build_info=lambda: {"cuda_version": "12.5.1"}),
        test=SimpleNamespace(is_built_with_cuda=lambda: True),
        config=SimpleNamespace(list_physical_devices=cuinit),
    )
    facts = tf_facts.facts_of(tf, list_gpus=False)
    assert facts["gpus"] == [] and facts["build_info"] == {"cuda_version": "12.5.1"}
    with pytest.raises(AssertionError):
        tf_facts.facts_of(tf)


def test_dry_run_reports_runtime_and_skips_gpu_verdicts(tmp_path: Path) -> None:
    result = hosts.run_check(
        hosts.docker_without_gpus(tmp_path / "root"), hosts.probes(), tmp_path, cpu_replicas="2"
    )
    statuses = {c["id"]: c["status"] for c in result.report["checks"]}
    assert statuses["runtime.environment"] == "pass" and statuses["tensorflow.import"] == "pass"
    for check_id in ("runtime.gpu_access", "driver.nvml", "health.gpus", "tensorflow.gpus_visible"):
        assert statuses[check_id] == "skip"
        assert "not checked in a --cpu-replicas dry run" in result.check(check_id)["summary"]
    assert result.report["host"]["runtime"]["kind"] == "docker"
    assert result.report["host"]["devices"] == ["/cpu:0", "/cpu:1"]
    assert result.stdout == "visible_gpus=0\n"


@pytest.mark.parametrize(("cc", "code", "status"), [("12.0", 23, "fail"), ("10.0", 0, "warn")])
def test_cc_12_reached_only_by_compute_90_ptx_is_unsupported(
    tmp_path: Path, cc: str, code: int, status: str
) -> None:
    """The H100 capture with its compute capability replaced (no real RTX 5090 / B200 NVML capture is at
    hand): TensorFlow 2.21's compute_90 PTX fails to load on cc 12.0 (tensorflow#99592, #97387); for cc 10.0
    no such report was found, so it stays the JIT warning."""
    fake = hosts.nvml_h100s(2)
    fake.devices = [{**d, "compute_cap": cc} for d in fake.devices if not isinstance(d, int)]
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), hosts.probes(fake, tf=TF(gpus=2)), tmp_path
    )
    check = result.check("tensorflow.compute_cap")
    assert (result.code, check["status"]) == (code, status)
    assert "compute_90" in check["summary"]
    assert ("issues/99592" in check["summary"]) == (code == 23)


def test_a_forward_compat_libcuda_is_reported_and_runs_the_build(tmp_path: Path) -> None:
    """The R535 H100 host (CUDA 12.2 kernel driver: exit 13 above) with the cuda-compat package loaded:
    TensorFlow's child reports libcuda's cuDriverGetVersion 12.8 (a value; no public capture of a compat
    libcuda's answer exists), which is what CUDA programs run against."""
    tf = replace(TF(gpus=8), libcuda_version=12080)
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), hosts.probes(hosts.nvml_h100x8_r535(), tf=tf), tmp_path
    )
    check = result.check("tensorflow.driver_compat")
    assert check["status"] == "pass", check
    assert check["details"]["libcuda_cuda"] == "12.8" and check["details"]["driver_cuda"] == "12.2"
    assert (
        "forward-compatibility package giving CUDA 12.8; the kernel driver's own is CUDA 12.2"
        in check["summary"]
    )
