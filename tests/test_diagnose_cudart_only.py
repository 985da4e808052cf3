"""A missing CUDA runtime and TensorFlow's own "Ignore above cudart dlerror" notice (diagnose/cudart_only.py):
still 22 (this tool checks GPU machines), with the CPU machine's harmless reading (0) named beside it.

Each line is copied from the public thread named beside it (real_lines.yaml holds them too)."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.findings import Finding
from tfdist_validate.exitcodes import ExitCode

# ali-vilab/dreamtalk#32
CUDART = (
    "2024-02-25 18:52:47.991396: W tensorflow/stream_executor/platform/default/dso_loader.cc:64]"
    " Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared"
    " object file: No such file or directory"
)
# jax-ml/jax#3746
NOTICE = (
    "2021-04-09 19:52:41.024341: I tensorflow/stream_executor/cuda/cudart_stub.cc:29]"
    " Ignore above cudart dlerror if you do not have a GPU set up on your machine."
)
# tensorflow/tensorflow#43138
CUBLAS = (
    "2020-09-11 17:33:59.984839: I tensorflow/stream_executor/platform/default/dso_loader.cc:53]"
    " Could not dlopen library 'libcublas.so.10.0'; dlerror: libcublas.so.10.0: cannot open shared object"
    " file: No such file or directory"
)
# NVIDIA/DeepLearningExamples#405
OOM = "(0) Resource exhausted: Out of memory while trying to allocate 68852648264 bytes."


def _missing(log: str) -> Finding:
    result = diagnose(log)
    assert result.code == ExitCode.TF_NO_GPU
    return next(f for f in result.failures if f.signature.id == "cuda-libs-missing")


def test_cudart_alone_with_tensorflows_notice_names_the_cpu_machines_harmless_reading() -> None:
    finding = _missing(f"{CUDART}\n{NOTICE}")
    assert "harmless (0)" in finding.alternatives
    assert "CPU" in finding.alternatives
    assert "CUDA runtime" in finding.why


def test_without_the_notice_nothing_is_added() -> None:
    assert _missing(CUDART).alternatives == ""


def test_another_missing_library_is_not_covered_by_the_notice() -> None:
    # TensorFlow's notice speaks of cudart only: a missing cuBLAS means the GPU build went further
    assert _missing(f"{CUDART}\n{NOTICE}\n{CUBLAS}").alternatives == ""


def test_another_failure_in_the_log_keeps_the_finding_as_it_is() -> None:
    result = diagnose(f"{CUDART}\n{NOTICE}\n{OOM}")
    finding = next(f for f in result.failures if f.signature.id == "cuda-libs-missing")
    assert finding.alternatives == ""
