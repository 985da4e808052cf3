"""The CUDA libraries TensorFlow would open (probes/cuda_libs.py, checks/cuda_libraries.py), and the driver
judged against the CUDA those installed libraries are (checks/tensorflow_build.py: tensorflow.driver_compat).

The probe runs on real files: TensorFlow's own shared objects (their RUNPATH) and real system libraries laid
out where the wheels put theirs. The checks run on the probe's real answer in the CUDA image without a GPU
(tests/fixtures/real/tf-facts_tf-2.21.0_cuda-image-no-gpu.json), with recorded NVML hosts; a newer or missing
installed set is that record changed at the probe boundary.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import hosts
from tfdist_validate.probes import cuda_libs
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.probes.tf_facts import MARKER, TfFacts, from_json

TF_DIR = Path(importlib.util.find_spec("tensorflow").origin).parent  # type: ignore[arg-type, union-attr]
LIBZ = next(
    p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1") if Path(p).exists()
)
BUILD = {"cuda_version": "12.5.1", "cudnn_version": "9"}


def image_facts(gpus: int | None = None) -> TfFacts:
    """The TensorFlow child's real answer in the CUDA image (no GPU: `--no-gpus`)."""
    record = json.loads(hosts.real("tf-facts_tf-2.21.0_cuda-image-no-gpu.json"))
    line = record["stdout_line"]
    assert line.startswith(MARKER)
    facts = from_json(json.loads(line[len(MARKER) :]), record["stderr"])
    if gpus is not None:
        facts = replace(facts, gpus=tuple(f"/physical_device:GPU:{i}" for i in range(gpus)))
    return facts


def library(facts: TfFacts, soname: str) -> dict[str, Any]:
    return next(dict(x) for x in facts.cuda_libraries or () if x["soname"] == soname)


def with_library(facts: TfFacts, soname: str, **changes: Any) -> TfFacts:
    libraries = tuple({**x, **changes} if x["soname"] == soname else x for x in facts.cuda_libraries or ())
    return replace(facts, cuda_libraries=libraries)


def no_ldconfig(argv: Any, timeout: float) -> CommandResult:
    return CommandResult(tuple(argv), None, "", "", "no ldconfig here")


# ---------------------------------------------------------------- the probe, on real files


def test_tensorflows_runpath_names_the_wheels_folders() -> None:
    """TensorFlow 2.21's own libtensorflow_framework.so.2 (the installed wheel): its DT_RUNPATH, $ORIGIN
    expanded, points into site-packages/nvidia/*/lib, where the and-cuda wheels install."""
    folders = cuda_libs.runpath(TF_DIR / "libtensorflow_framework.so.2")
    site = TF_DIR.parent
    for wheel in ("cuda_runtime", "cublas", "cudnn", "cufft", "cusparse", "nccl", "cuda_cupti"):
        assert str(site / "nvidia" / wheel / "lib") in folders
    # cuSOLVER's folder is only in libtensorflow_cc.so.2's RUNPATH: the probe reads all three objects
    assert str(site / "nvidia/cusolver/lib") not in folders
    assert str(site / "nvidia/cusolver/lib") in cuda_libs.runpath(TF_DIR / "libtensorflow_cc.so.2")


def test_runpath_of_what_is_not_elf_is_empty(tmp_path: Path) -> None:
    (tmp_path / "x.so").write_text("not an ELF file")
    assert cuda_libs.runpath(tmp_path / "x.so") == []
    assert cuda_libs.runpath(tmp_path / "missing.so") == []


def _site(tmp_path: Path) -> tuple[Path, Path]:
    """A site-packages with TensorFlow's real shared objects (linked) and an nvidia/ tree beside them."""
    site = tmp_path / "site-packages"
    (site / "tensorflow/python").mkdir(parents=True)
    for name in cuda_libs.TF_OBJECTS:
        (site / "tensorflow" / name).symlink_to(TF_DIR / name)
    return site, site / "tensorflow"


def test_libraries_are_found_through_tensorflows_runpath_and_loaded(tmp_path: Path) -> None:
    site, tf_dir = _site(tmp_path)
    cudart = site / "nvidia/cuda_runtime/lib/libcudart.so.12"
    cudart.parent.mkdir(parents=True)
    shutil.copy(LIBZ, cudart)  # a real library that loads; it has no cudaRuntimeGetVersion to ask
    cudnn = site / "nvidia/cudnn/lib/libcudnn.so.9"
    cudnn.parent.mkdir(parents=True)
    cudnn.write_bytes(b"\x7fELF broken")
    records = {r["soname"]: r for r in cuda_libs.inspect(tf_dir, BUILD, {}, no_ldconfig)}

    assert records["libcudart.so.12"]["path"] == os.path.normpath(cudart)
    assert (records["libcudart.so.12"]["found_via"], records["libcudart.so.12"]["loads"]) == ("RUNPATH", True)
    assert records["libcudart.so.12"]["version"] is None
    broken = records["libcudnn.so.9"]
    assert broken["path"] and broken["loads"] is False and broken["error"]
    missing = records["libcublas.so.12"]
    assert missing["path"] is None and "not found" in missing["error"] and "TensorFlow" in missing["error"]
    # NCCL's soname major is 2, cuFFT's and cuSOLVER's 11 for CUDA 12, cuDNN's the build's
    assert {"libnccl.so.2", "libcufft.so.11", "libcusolver.so.11", "libcudnn.so.9"} <= set(records)
    assert records["libcuda.so.1"]["host"] and records["libcuda.so.1"]["loads"] is None


def test_ld_library_path_comes_before_the_runpath(tmp_path: Path) -> None:
    site, tf_dir = _site(tmp_path)
    for folder in (site / "nvidia/cuda_runtime/lib", tmp_path / "first"):
        folder.mkdir(parents=True)
        shutil.copy(LIBZ, folder / "libcudart.so.12")
    records = {
        r["soname"]: r for r in cuda_libs.inspect(tf_dir, BUILD, {"LD_LIBRARY_PATH": f"{tmp_path}/first"})
    }
    assert records["libcudart.so.12"]["found_via"] == "LD_LIBRARY_PATH"
    assert records["libcudart.so.12"]["path"] == str(tmp_path / "first/libcudart.so.12")


def test_the_hosts_libraries_come_from_ld_library_path_or_the_ld_cache(tmp_path: Path) -> None:
    """GKE puts libcuda in /usr/local/nvidia/lib64, on the image's LD_LIBRARY_PATH; the toolkit registers it
    with ldconfig. `ldconfig -p` lines as glibc prints them."""
    _, tf_dir = _site(tmp_path)
    (tmp_path / "nvidia/lib64").mkdir(parents=True)
    (tmp_path / "nvidia/lib64/libcuda.so.1").write_bytes(b"")
    listing = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
        "\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n"
    )

    def ldconfig(argv: Any, timeout: float) -> CommandResult:
        return CommandResult(tuple(argv), 0, listing, "")

    env = {"LD_LIBRARY_PATH": f"{tmp_path}/nvidia/lib:{tmp_path}/nvidia/lib64"}
    records = {r["soname"]: r for r in cuda_libs.inspect(tf_dir, BUILD, env, ldconfig)}
    assert records["libcuda.so.1"]["found_via"] == "LD_LIBRARY_PATH"
    assert records["libnvidia-ml.so.1"]["path"] == "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    assert records["libnvidia-ml.so.1"]["found_via"] == "ld.so.cache"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (12050, "12.5"),
        (12090, "12.9"),
        (90300, "9.3.0"),
        (92800, "9.28.0"),
        (22707, "2.27.7"),
        (120503, "12.5.3"),
        (8907, "8.9.7"),
        (0, None),
    ],
)
def test_versions_as_the_libraries_encode_them(value: int, text: str | None) -> None:
    assert cuda_libs._decode(value) == text


# ---------------------------------------------------------------- the check, on the image's real answer


def test_the_cuda_image_record_has_every_library_from_its_wheel() -> None:
    """What the CUDA image gave (real): everything TensorFlow opens loads from the pinned wheels, with the
    library's own version; NVRTC sits where cuDNN 9.3's RUNPATH does not look (nvidia/cuda_nvrtc/lib vs
    nvidia/nvrtc/lib), which the Dockerfile's link now fixes; libcuda and NVML are the host's, absent."""
    facts = image_facts()
    assert library(facts, "libcudnn.so.9")["version"] == "9.3.0"
    assert library(facts, "libcudart.so.12")["wheel"] == "nvidia-cuda-runtime-cu12"
    assert library(facts, "libnccl.so.2")["version"] == "2.27.7"
    nvrtc = library(facts, "libnvrtc.so.12")
    assert nvrtc["loads"] is False and nvrtc["path_outside_search"].endswith(
        "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    )
    assert library(facts, "libcuda.so.1")["path"] is None


def _two_gpu_host(tmp_path: Path, facts: TfFacts) -> hosts.CheckRun:
    """`check` in a container the toolkit gave two healthy GPUs, with TensorFlow's facts `facts`."""
    return hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"),
        hosts.probes(hosts.nvml_two_healthy(), tf=facts),
        tmp_path,
    )


def test_a_gpu_host_with_every_library_warns_only_about_nvrtc(tmp_path: Path) -> None:
    result = _two_gpu_host(tmp_path, image_facts(2))
    check = result.check("tensorflow.cuda_libraries")
    assert (result.code, check["status"]) == (0, "warn"), check
    assert "libcudnn.so.9 9.3.0 (RUNPATH, nvidia-cudnn-cu12 9.3.0.75)" in check["summary"]
    assert "libnvrtc.so.12" in check["summary"] and "nvidia/cuda_nvrtc/lib" in check["hint"]
    assert "LD_LIBRARY_PATH=/opt/tfdist/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib" in check["hint"]


def test_all_present_passes_and_names_each_version(tmp_path: Path) -> None:
    nvrtc = "/opt/tfdist/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    facts = with_library(
        image_facts(2), "libnvrtc.so.12", path=nvrtc, found_via="RUNPATH", loads=True, version="12.5"
    )
    result = _two_gpu_host(tmp_path, facts)
    check = result.check("tensorflow.cuda_libraries")
    assert check["status"] == "pass", check
    assert check["summary"].startswith("11 CUDA libraries load: libcudart.so.12 12.5 (RUNPATH,")
    assert "libcuda.so.1, libnvidia-ml.so.1 from the host's driver: absent here" in check["summary"]


def test_a_missing_required_library_on_a_gpu_host_is_22_named(tmp_path: Path) -> None:
    facts = with_library(
        image_facts(2),
        "libcudnn.so.9",
        path=None,
        loads=False,
        found_via=None,
        error="not found (LD_LIBRARY_PATH, the RUNPATH of TensorFlow, ld.so.cache, default folders)",
    )
    result = _two_gpu_host(tmp_path, facts)
    check = result.check("tensorflow.cuda_libraries")
    assert (result.code, check["status"]) == (22, "fail"), check
    assert result.report["verdict"]["summary"].startswith("TensorFlow cannot open 1 CUDA library")
    assert "libcudnn.so.9 (cuDNN) is not found" in check["summary"]
    assert "pip install 'tensorflow[and-cuda]==2.21.0'" in check["hint"]
    assert result.check("tensorflow.gpus_visible")["status"] == "skip"


def test_a_dry_run_reports_missing_libraries_without_failing(tmp_path: Path) -> None:
    """The CPU image and a development venv: the CUDA build of TensorFlow without its CUDA wheels."""
    facts = with_library(image_facts(), "libcublas.so.12", path=None, loads=False, error="not found (...)")
    result = hosts.run_check(
        hosts.docker_without_gpus(tmp_path / "root"), hosts.probes(tf=facts), tmp_path, cpu_replicas="2"
    )
    check = result.check("tensorflow.cuda_libraries")
    assert (result.code, check["status"]) == (0, "skip"), check
    assert "on a GPU host this is 22" in check["summary"] and "libcublas.so.12" in check["summary"]


def test_a_cpu_only_build_has_nothing_to_load(tmp_path: Path) -> None:
    facts = replace(image_facts(), built_with_cuda=False, cuda_libraries=None)
    result = hosts.run_check(
        hosts.docker_without_gpus(tmp_path / "root"), hosts.probes(tf=facts), tmp_path, cpu_replicas="2"
    )
    assert "CPU-only build" in result.check("tensorflow.cuda_libraries")["summary"]


# ---------------------------------------------------------------- the driver against the installed CUDA


NEWER_WHEELS = {  # what the lock resolved before the pin (measured in that image): CUDA 12.9, cuDNN 9.28
    "nvidia-cublas-cu12": "12.9.1.4",
    "nvidia-cuda-nvrtc-cu12": "12.9.86",
    "nvidia-cuda-runtime-cu12": "12.9.79",
    "nvidia-cudnn-cu12": "9.28.0.42",
    "nvidia-nvjitlink-cu12": "12.9.86",
    "nvidia-nccl-cu12": "2.32.3",
}


def newer(facts: TfFacts, wheels: dict[str, str] = NEWER_WHEELS, cudart: str = "12.9") -> TfFacts:
    return replace(with_library(facts, "libcudart.so.12", version=cudart), cuda_wheels=wheels)


def test_the_report_names_the_builds_and_the_installed_cuda(tmp_path: Path) -> None:
    result = _two_gpu_host(tmp_path, image_facts(2))
    check = result.check("tensorflow.driver_compat")
    assert check["status"] == "pass", check
    assert "driver supports CUDA 13.2 >= build's 12.5.1" in check["summary"]
    assert "the installed CUDA libraries are CUDA 12.5 (" in check["summary"]
    assert "nvidia-cuda-runtime-cu12 12.5.82" in check["summary"]
    assert check["details"]["installed_cuda"] == "12.5" and check["details"]["build_cuda"] == "12.5.1"


def test_libraries_newer_than_the_driver_warn_although_the_build_runs(tmp_path: Path) -> None:
    """H100s on R535 with the cuda-compat package (libcuda says CUDA 12.8): TensorFlow's 12.5.1 build runs,
    but CUDA 12.9 wheels generate PTX at run time that a 12.8 driver cannot load."""
    tf = replace(newer(image_facts(8)), libcuda_version=12080)
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), hosts.probes(hosts.nvml_h100x8_r535(), tf=tf), tmp_path
    )
    check = result.check("tensorflow.driver_compat")
    assert check["status"] == "warn", check
    assert "TensorFlow's build: driver supports CUDA 12.8 >= build's 12.5.1" in check["summary"]
    assert "the installed CUDA libraries are CUDA 12.9" in check["summary"]
    assert "nvidia-cuda-nvrtc-cu12 12.9.86" in check["summary"] and "libcudart.so.12 12.9" in check["summary"]
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in check["summary"]
    assert "supports CUDA 12.9" in check["hint"] and "'nvidia-cuda-runtime-cu12==12.5.*'" in check["hint"]


def test_the_same_libraries_pass_where_the_build_does(tmp_path: Path) -> None:
    """Without the newer wheels the same host passes: the pin keeps the driver floor at the build's."""
    tf = replace(image_facts(8), libcuda_version=12080)
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), hosts.probes(hosts.nvml_h100x8_r535(), tf=tf), tmp_path
    )
    assert result.check("tensorflow.driver_compat")["status"] == "pass"


def test_libraries_of_a_newer_cuda_major_than_the_driver_are_13(tmp_path: Path) -> None:
    """CUDA 13 wheels beside a 12.5 build on a CUDA 12.4 driver (A100, R550): the build would run by
    minor-version compatibility, the libraries not at all."""
    wheels = {"nvidia-cuda-runtime-cu13": "13.0.96", "nvidia-cublas-cu13": "13.1.0.3"}
    tf = replace(image_facts(1), cuda_wheels=wheels)
    fake = hosts.nvml_table("nvidia-smi_a100-sxm4-40gb_550.144.03.txt")
    result = hosts.run_check(
        hosts.docker_with_toolkit(tmp_path / "root"), hosts.probes(fake, tf=tf), tmp_path, min_gpus="1"
    )
    check = result.check("tensorflow.driver_compat")
    assert (result.code, check["status"]) == (13, "fail"), check
    assert "the installed CUDA libraries are CUDA 13.1" in check["summary"]
    assert "driver supports only CUDA 12.4; the build needs 13.1" in check["summary"]
    assert "TensorFlow's build: driver supports CUDA 12.4, the build uses 12.5.1" in check["summary"]
