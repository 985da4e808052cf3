"""Round 19: WSL2's GPU passthrough limits (NVIDIA's CUDA on WSL guide, "Known Limitations for Linux CUDA
Applications"), read as 12 only where the log shows WSL, and left as they were on a host that is not WSL.

Real lines copied from public threads are in tests/fixtures/logs/real_lines.yaml (round 19 WSL block).
The lines below that are NOT copied from threads put values into a printer's format, at the commit named
beside it:

- pynvml's exception for NVML_ERROR_UNKNOWN (NVMLError_Unknown, the class pynvml makes per NVML error
  name; caught by name in distributed/diagnostics/nvml.py at dask/distributed
  40fcd99a8cd41c39071a16a546e93a9298f1b64d) and Dask's refusal in the same file ("Outdated NVIDIA drivers
  for WSL, please upgrade to {MINIMUM_WSL_VERSION} or newer", MINIMUM_WSL_VERSION = "512.15");
- the driver API's name for error 304 (CUDA_ERROR_OPERATING_SYSTEM, Common/drvapi_error_string.h at
  NVIDIA/cuda-samples c94ff366aed18c797b8a85dfaac7817b0228b420) in the CUDA samples' checkCudaErrors format.
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL
from tfdist_validate.diagnose import diagnose

HOST = "Linux gpu-node-07 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 x86_64 GNU/Linux"

NVML_UNKNOWN = [
    "pynvml.nvml.NVMLError_Unknown: Unknown Error",
    "NVMLError_Unknown                         Traceback (most recent call last)",
    "nvmlDeviceGetComputeRunningProcesses failed: NVML_ERROR_UNKNOWN",
]


def _ids(result: object) -> set[str]:
    return {f.id for f in result.findings}  # type: ignore[attr-defined]


@pytest.mark.parametrize("line", NVML_UNKNOWN)
def test_nvml_unknown_is_wsl2_where_the_log_shows_wsl(line: str) -> None:
    assert int(diagnose(f"{WSL}\n{line}").code) == 12
    assert int(diagnose(f"I run this in WSL2 on Windows 11\n{line}").code) == 12


@pytest.mark.parametrize("line", NVML_UNKNOWN)
def test_nvml_unknown_on_a_linux_host_is_not_read_as_wsl(line: str) -> None:
    for text in (line, f"{HOST}\n{line}"):
        result = diagnose(text)
        assert int(result.code) != 12
        assert "wsl-nvml-query-unknown-error" not in _ids(result)


def test_dask_refusing_an_old_wsl_driver_names_wsl_itself() -> None:
    line = "RuntimeError: Outdated NVIDIA drivers for WSL, please upgrade to 512.15 or newer"
    assert int(diagnose(line).code) == 12


@pytest.mark.parametrize(
    "line",
    [
        "CUDA error at simpleGL.cu:421 code=304(cudaErrorOperatingSystem)"
        ' "cudaGraphicsGLRegisterBuffer(&r, vbo, 1)"',
        "cuGraphicsGLRegisterImage failed: CUDA_ERROR_OPERATING_SYSTEM",
        # the CUDA samples' checkCudaErrors format ("code=%d(%s) \"%s\"") around an interop call
        "CUDA error at volumeRender.cpp:301 code=999(cudaErrorUnknown)"
        ' "cudaGraphicsGLRegisterBuffer(&res, pbo, 2)"',
        "Assertion 'cudaGraphicsGLRegisterBuffer(&res, pbo, 1) == cudaSuccess' failed!",
        "cudaGraphicsGLRegisterImage failed: OS call failed or operation not supported on this OS",
    ],
)
def test_cuda_gl_interop_os_error_is_wsl2_where_the_log_shows_wsl(line: str) -> None:
    assert int(diagnose(f"{WSL}\n{line}").code) == 12
    # the same error on a Linux host: OpenGL on another GPU or in software, not WSL's limit
    result = diagnose(f"{HOST}\n{line}")
    assert int(result.code) != 12
    assert "wsl-cuda-graphics-interop-unsupported" not in _ids(result)


def test_interop_os_error_on_a_linux_and_a_windows_host_stays_as_it_was() -> None:
    # neka-nat/cupoch#118 (Pop!_OS, a Linux host) and chenyongxing/KDRay#3 (native Windows 10)
    cupoch = (
        "Linux pop-os 6.2.6-76060206-generic x86_64 GNU/Linux\n"
        "Error: OS call failed or operation not supported on this OS\tphong_shader.cu:330"
    )
    kdray = (
        "请问对操作系统有什么要求吗\uff1f我的是windows10的\n"
        "register opengl buffer failed.OS call failed or operation not supported on this OS"
    )
    for text in (cupoch, kdray):
        result = diagnose(text)
        assert int(result.code) == 0
        assert "wsl-cuda-graphics-interop-unsupported" not in _ids(result)
