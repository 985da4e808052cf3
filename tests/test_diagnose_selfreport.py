"""The self-report reasoner (diagnose/selfreport.py): what users paste about TensorFlow, read together."""

from __future__ import annotations

import json

import pytest

from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.command import render
from tfdist_validate.diagnose.needles import literal_needle
from tfdist_validate.exitcodes import ExitCode

PACKAGE = "tf-cpu-only-package"


def _package_finding(log: list[str]) -> str | None:
    found = [f for f in diagnose(log).failures if f.signature.id == PACKAGE]
    assert len(found) <= 1
    return found[0].why if found else None


@pytest.mark.parametrize(
    ("log", "named"),
    [
        # pip list beside tensorflow-gpu (tensorflow/tensorflow#35113): both own the `tensorflow` module
        (["tensorflow           1.14.0", "tensorflow-gpu       1.14.0"], "no GPU support before 1.15"),
        # Anaconda's MKL variant (tensorflow/tensorflow#45853)
        (["tensorflow                2.3.0           mkl_py37he70e3f7_0    defaults"], "CPU variant (mkl"),
        # conda-forge had no CUDA build before 2.6 (conda-forge/tensorflow-feedstock#157)
        (["tensorflow                1.10.0                   py36_0    conda-forge"], "conda-forge"),
        # 1.15.2+ went back to CPU-only (tensorflow/tensorflow#36347), 2.0 had none (tensorflow#34485)
        (["tensorflow==1.15.2 # CPU Version of TensorFlow"], "1.15.2 and later"),
        (["pip install tensorflow==2.0.0"], "2.0 is CPU-only"),
        (["Successfully installed tensorflow-cpu-2.4.1"], "CPU-only package"),
    ],
)
def test_a_cpu_only_package_is_named_with_the_row_of_the_table(log: list[str], named: str) -> None:
    reason = _package_finding(log)
    assert reason is not None and named in reason
    assert diagnose(log).code == ExitCode.TF_NOT_CUDA_BUILD


@pytest.mark.parametrize(
    "log",
    [
        ["tensorflow-gpu       1.14.0"],
        ["tensorflow==1.15"],  # 1.15.0 had CUDA in the plain package
        ["tensorflow==2.4.1"],
        ["tensorflow                1.13.1          gpu_py36h3991807_0"],  # rlworkgroup/garage#698
        ["tensorflow                2.15.0          cuda120py311h1234567_0    conda-forge"],
        # pip could not install the pin: nothing was installed
        ["ERROR: No matching distribution found for tensorflow==1.9.0"],
        # `conda search` lists every variant (nanoporetech/medaka#232): a listing, not an install
        [
            "tensorflow                     2.2.0 eigen_py36h84d285f_0  pkgs/main",
            "tensorflow                     2.2.0 gpu_py36hf933387_0  pkgs/main",
            "tensorflow                     2.2.0 mkl_py36h5a57954_0  pkgs/main",
        ],
        # a sentence is not a pip row
        ["TensorFlow 1.14.0"],
        # a pip list in a report of a collective failure: TensorFlow got as far as NCCL, the row is background
        [
            "tensorflow           1.14.0",
            "tensorflow-gpu       1.14.0",
            "NCCL WARN Cuda failure 'out of memory'",
        ],
        # a CPU-only pin, but TensorFlow went on to load CUDA libraries: the build running has CUDA
        [
            "tensorflow==1.13.1",
            "2019-11-20 17:45:31.698108: W tensorflow/stream_executor/platform/default/dso_loader.cc:55]"
            " Could not load dynamic library 'libcudart.so.10.1'; dlerror: libcudart.so.10.1: cannot open"
            " shared object file: No such file or directory",
        ],
        # a CPU-only version row, but the GPU platform found and used a device (gpu_device.cc's own lines,
        # as a TensorFlow 1.x log on a GTX 980 printed them): the build running has GPU support
        [
            "tensorflow           1.10.0",
            "2019-07-05 11:50:26.575777: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1405] Found"
            " device 0 with properties: ",
        ],
        ["tensorflow 1.10.0", "name: GeForce GTX 980 major: 5 minor: 2 memoryClockRate(GHz): 1.266"],
        [
            "tensorflow==1.13.1",
            "2019-07-05 11:50:26.960547: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1097] Created"
            " TensorFlow device (/device:GPU:0 with 3593 MB memory) -> physical GPU (device: 0, name: GeForce"
            " GTX 980, pci bus id: 0000:83:00.0, compute capability: 5.2)",
        ],
    ],
)
def test_packages_with_cuda_or_not_installed_are_not_blamed(log: list[str]) -> None:
    assert _package_finding(log) is None


EMPTY = ["tf.config.list_physical_devices('GPU')", "[]"]


def test_tensorflows_empty_gpu_list_alone_reads_as_a_cpu_only_build_with_the_alternative() -> None:
    finding = diagnose(EMPTY).failures[0]
    assert finding.code == ExitCode.TF_NOT_CUDA_BUILD
    assert "nothing else" in finding.why and "(22)" in finding.alternatives


@pytest.mark.parametrize(
    ("evidence", "named"),
    [
        # an XLA_GPU device is registered only by a CUDA build (tensorflow/tensorflow#30748)
        (' name: "/device:XLA_GPU:0"', "build has CUDA"),
        ("             ('is_cuda_build', True),", "build has CUDA"),  # conda-forge/tensorflow-feedstock#157
        ("tensorflow-gpu       1.14.0", "tensorflow-gpu 1.14.0"),
        ("- TensorFlow version: 2.5.0", "TensorFlow 2.5"),  # CUDA in the plain package on Linux and Windows
        (
            "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries."
            " Please make sure the missing libraries mentioned above are installed properly if you would like"
            " to use GPU.",
            "build has CUDA",
        ),
    ],
)
def test_an_empty_gpu_list_from_a_cuda_build_is_22(evidence: str, named: str) -> None:
    result = diagnose([evidence, *EMPTY])
    assert result.code == ExitCode.TF_NO_GPU
    answer = next(f for f in result.failures if f.signature.no_gpu_answer)
    assert named in answer.why and answer.alternatives == ""


def test_in_a_container_the_empty_list_keeps_its_own_reading() -> None:
    result = diagnose(["root@2bf98ac6fa67:/workspace# python -c 'import tensorflow'", *EMPTY])
    answer = next(f for f in result.failures if f.signature.no_gpu_answer)
    assert answer.code == ExitCode.TF_NO_GPU and answer.why == ""


def test_the_platform_finding_names_the_version_and_the_platform_lines() -> None:
    log = ["### TensorFlow version", "2.16.1", "### OS platform and distribution", "Windows 11", *EMPTY]
    result = diagnose(log)
    assert result.code == ExitCode.TF_NOT_CUDA_BUILD
    reasons = [f.why for f in result.failures if f.why]
    assert reasons and all("TensorFlow 2.16 (line 2" in r and "native Windows" in r for r in reasons)
    assert "after 2.10" in reasons[0]


@pytest.mark.parametrize(
    "line",
    [
        "Is TensorFlow built with CUDA?: False",
        "Built with CUDA: False",
        "GPU not detected / tf.test.is_built_with_cuda returns False",  # tensorflow/tensorflow#47147
        "{'is_cuda_build': False, 'is_rocm_build': False}",
    ],
)
def test_built_with_cuda_false_in_its_usual_phrasings_is_21(line: str) -> None:
    assert diagnose(line).code == ExitCode.TF_NOT_CUDA_BUILD


def test_the_reason_is_in_the_json_and_the_human_output() -> None:
    result = diagnose(["tensorflow           1.14.0"])
    document = result.to_json()
    assert "before 1.15" in document["failures"][0]["why"]
    json.dumps(document)
    assert "  why:    tensorflow 1.14.0 (line 1): PyPI" in render(result, "log")


def test_a_named_literal_group_keeps_its_text_as_the_needle() -> None:
    assert literal_needle(r"^\W{0,4}(?P<name>(?-i:tensorflow-gpu)) +\d") == "tensorflow-gpu "
    assert literal_needle(r"(?P<v>\d+)\.x") == ".x"
    assert literal_needle(r"(?P<n>abc)?de") == "de"


@pytest.mark.parametrize(
    ("evidence", "context"),
    [
        # conda's solver on a Mac (jiangyi15/tf-pwa#173) and `conda info` on Windows (anaconda-issues#12194)
        ("Platform: osx-64", "macos"),
        ("                          https://repo.anaconda.com/pkgs/main/win-64", "windows"),
    ],
)
def test_condas_platform_names_where_the_empty_list_came_from(evidence: str, context: str) -> None:
    result = diagnose([evidence, *EMPTY])
    finding = result.failures[0]
    assert result.code == ExitCode.TF_NOT_CUDA_BUILD and finding.context == context
    assert "nothing else" not in finding.why
