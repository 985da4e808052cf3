"""Can this driver run this TensorFlow build's CUDA, and does the build carry code for each GPU?

Two rule sets from NVIDIA's documentation, kept as data so a new CUDA major is one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Minimum driver for CUDA minor-version compatibility, per CUDA major, Linux x86_64 / Windows:
# CUDA Toolkit Release Notes, table "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version
# Compatibility" (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html) and
# https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
# (11.x >= 450.80.02 / 452.39, 12.x >= 525.60.13 / 527.41, 13.x >= 580).
MINIMUM_DRIVER = {
    11: ((450, 80, 2), (452, 39)),
    12: ((525, 60, 13), (527, 41)),
    13: ((580,), (580,)),
}

# The driver each CUDA toolkit release ships with (Linux x86_64, CUDA Toolkit Release Notes, table "CUDA
# Toolkit and Corresponding Driver Versions", https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html).
# Before CUDA 11 there was no minor-version compatibility: a toolkit needed this driver or newer. From CUDA 11
# an older driver of the same major (MINIMUM_DRIVER) runs the toolkit's machine code, but not PTX it makes.
TOOLKIT_DRIVER = {
    (8, 0): (375, 26),
    (9, 0): (384, 81),
    (9, 1): (387, 26),
    (9, 2): (396, 26),
    (10, 0): (410, 48),
    (10, 1): (418, 39),
    (10, 2): (440, 33),
    (11, 0): (450, 36, 6),
    (11, 1): (455, 23),
    (11, 2): (460, 27, 3),
    (11, 3): (465, 19, 1),
    (11, 4): (470, 42, 1),
    (11, 5): (495, 29, 5),
    (11, 6): (510, 39, 1),
    (11, 7): (515, 43, 4),
    (11, 8): (520, 61, 5),
    (12, 0): (525, 60, 13),
    (12, 1): (530, 30, 2),
    (12, 2): (535, 54, 3),
    (12, 3): (545, 23, 6),
    (12, 4): (550, 54, 14),
    (12, 5): (555, 42, 2),
    (12, 6): (560, 28, 3),
}


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = re.findall(r"\d+", text)
    return tuple(int(p) for p in parts) if parts else None


def show_version(version: tuple[int, ...]) -> str:
    return ".".join(f"{v:02d}" if i == 2 else str(v) for i, v in enumerate(version))


@dataclass(frozen=True)
class Compat:
    ok: bool
    minor_compat: bool  # runs only through minor-version compatibility (PTX JIT of newer PTX may fail)
    reason: str


def driver_runs_cuda(
    driver_version: str | None, driver_cuda: str | None, build_cuda: str, windows: bool = False
) -> Compat:
    """driver_cuda: the CUDA version the driver supports (NVML), build_cuda: TensorFlow's cuda_version."""
    need = version_tuple(build_cuda)
    have = version_tuple(driver_cuda)
    if not need or not have:
        return Compat(True, False, "versions unknown; not compared")
    need_major, have_major = need[0], have[0]
    if have[:2] >= need[:2]:
        return Compat(True, False, f"driver supports CUDA {driver_cuda} >= build's {build_cuda}")
    if have_major < need_major:
        minimum = MINIMUM_DRIVER.get(need_major)
        floor = (
            f" (CUDA {need_major}.x needs driver >= {show_version(minimum[int(windows)])})" if minimum else ""
        )
        return Compat(
            False, False, f"driver supports only CUDA {driver_cuda}; the build needs {build_cuda}{floor}"
        )
    # same major, older minor: minor-version compatibility, if the driver reaches that major's floor
    minimum = MINIMUM_DRIVER.get(need_major)
    have_driver = version_tuple(driver_version)
    if minimum and have_driver is not None and have_driver < minimum[int(windows)]:
        return Compat(
            False,
            False,
            f"driver {driver_version} (CUDA {driver_cuda}) is below {show_version(minimum[int(windows)])},"
            f" the minimum for CUDA {need_major}.x minor-version compatibility; the build needs {build_cuda}",
        )
    return Compat(
        True,
        True,
        f"driver supports CUDA {driver_cuda}, the build uses {build_cuda}: runs through CUDA minor-version"
        " compatibility (PTX built by the newer toolkit cannot be JIT-compiled by this driver)",
    )


# Compute capability majors whose GPUs cannot run TensorFlow's PTX although the driver JIT-compiles it in
# principle: on cc 12.0 (RTX 50xx) the pip builds' kernel_gen kernels fail to load ('cuModuleLoadData' ->
# CUDA_ERROR_INVALID_PTX, then CUDA_ERROR_INVALID_HANDLE at launch), TF 2.16-2.21 nightly, CUDA 12.8-13.0
# drivers. No public report was found for cc 10.x (B200), so it stays a JIT warning until one is.
PTX_FAILS = {
    12: (
        "https://github.com/tensorflow/tensorflow/issues/99592",
        "https://github.com/tensorflow/tensorflow/issues/97387",
        "https://github.com/tensorflow/tensorflow/issues/101746",
    ),
}


@dataclass(frozen=True)
class Coverage:
    status: str  # "native" | "ptx" | "none"
    via: str | None  # the build's entry that covers it ("sm_80", "compute_90")


def _arch(entry: str) -> tuple[str, tuple[int, int]] | None:
    # "sm_86", "compute_90", "sm_90a" (arch-specific, exact match only), also bare "8.6" from old builds
    match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", entry.strip())
    if match:
        kind = match.group(1) if not match.group(4) else f"{match.group(1)}_exact"
        return kind, (int(match.group(2)), int(match.group(3)))
    match = re.fullmatch(r"(\d+)\.(\d+)", entry.strip())
    if match:
        return "sm", (int(match.group(1)), int(match.group(2)))
    return None


def coverage(capability: tuple[int, int], build: list[str]) -> Coverage:
    """A cubin for X.y runs on X.z with z >= y (same major); PTX for X.y is JIT-compiled on any GPU >= X.y."""
    parsed = [(entry, _arch(entry)) for entry in build]
    for entry, arch in parsed:
        if arch and arch[0] in ("sm", "sm_exact") and arch[1] == capability:
            return Coverage("native", entry)
    for entry, arch in parsed:
        if arch and arch[0] == "sm" and arch[1][0] == capability[0] and arch[1][1] <= capability[1]:
            return Coverage("native", entry)
    ptx = [
        (arch[1], entry) for entry, arch in parsed if arch and arch[0] == "compute" and arch[1] <= capability
    ]
    if ptx:
        return Coverage("ptx", max(ptx)[1])
    return Coverage("none", None)


# Wheels versioned by the CUDA toolkit release they belong to ("12.5.82" is CUDA 12.5); cuFFT, cuDNN, NCCL...
# carry their own numbering and say nothing about it.
TOOLKIT_WHEELS = re.compile(r"^nvidia-(cuda-runtime|cuda-nvrtc|cuda-nvcc|cuda-cupti|nvjitlink|cublas)-cu\d+$")
# Libraries whose version (from the library itself) is a CUDA toolkit release.
TOOLKIT_LIBRARIES = ("libcudart.so.", "libnvrtc.so.", "libnvJitLink.so.")


def installed_cuda(
    libraries: tuple[Mapping[str, Any], ...] | None, wheels: Mapping[str, str]
) -> tuple[str, list[str]] | None:
    """The newest CUDA release among the installed CUDA libraries (what their run-time compilers, NVRTC,
    nvJitLink and ptxas, target), with the evidence: ("12.9", ["nvidia-cuda-nvrtc-cu12 12.9.86", ...])."""
    found: list[tuple[tuple[int, ...], str]] = []
    for name, version in wheels.items():
        numbers = version_tuple(version)
        if TOOLKIT_WHEELS.match(name) and numbers and len(numbers) >= 2:
            found.append((numbers[:2], f"{name} {version}"))
    for library in libraries or ():
        soname, said = str(library.get("soname") or ""), str(library.get("version") or "")
        numbers = version_tuple(said)
        if soname.startswith(TOOLKIT_LIBRARIES) and library.get("loads") and numbers and len(numbers) >= 2:
            found.append((numbers[:2], f"{soname} {said}"))
    if not found:
        return None
    newest = max(v for v, _ in found)
    return f"{newest[0]}.{newest[1]}", sorted({what for v, what in found if v == newest})
