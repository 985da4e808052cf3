"""Reasoning over the whole log: is the driver older than the CUDA the log's software needs (13)?

Two comparisons, from numbers the log prints and NVIDIA's tables (host/cuda_compat.py holds them):

- TensorFlow's "kernel version K does not match DSO version D": the libcuda the process loaded (D) is not
  the kernel driver's (K). Inside a container a newer D is the image's CUDA forward-compatibility libcuda
  (cuda-compat), made for a newer CUDA than the host driver supports and usable only on data-center GPUs
  with a matching driver branch: the host driver is too old for that image (the cause of CUDA error 803/804).
  On a bare host the usual cause is a driver upgraded without a reboot (10, nvml-version-mismatch), so only
  the container reading is made here.
- The driver version (nvidia-smi's header, TensorFlow's "kernel reported version is", the NVRM banner) against
  the CUDA release the named TensorFlow was built with (gpu_models.yaml's table, from TensorFlow's tested
  builds): below the oldest driver that runs that CUDA at all, when the log also shows a failure.

Only Linux driver numbers are compared: Windows drivers (native or under WSL2) are numbered differently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tfdist_validate.diagnose.capability import Fact, Verdict
from tfdist_validate.diagnose.findings import Line
from tfdist_validate.diagnose.gpu_models import Capability, load, shown
from tfdist_validate.diagnose.signatures import compile_pattern
from tfdist_validate.host.cuda_compat import MINIMUM_DRIVER, TOOLKIT_DRIVER, show_version

_VERSION = r"(?P<v>\d{3}\.\d{1,3}(?:\.\d{1,3})?)"
# Where a log states the kernel driver's version.
_DRIVER = (
    rf"Driver Version: +{_VERSION}",  # nvidia-smi's header
    rf"kernel reported version is: {_VERSION}",  # TensorFlow's cuda_diagnostics
    rf"NVIDIA UNIX \S+ Kernel Module +{_VERSION}",  # /proc/driver/nvidia/version (NVRM banner)
    # prose and environment reports: "nvidia driver version 470", "Nvidia driver version: 455.23.04",
    # TensorFlow's "Possibly insufficient driver version: 390.87.0"
    r"\bdriver version:? (?:is )?(?P<v>\d{3}(?:\.\d\d?\d?)?(?:\.\d\d?\d?)?)\b(?!\.)",
)
_MISMATCH = (
    rf"kernel version {_VERSION} does not match DSO version (?P<dso>\d{{3}}\.\d{{1,3}}(?:\.\d{{1,3}})?)",
)
# A CUDA release the log's software was built with or compiles with (nvcc's banner, "cuda-11.6.2",
# "CUDA 11.7", an nvidia/cuda image tag); not nvidia-smi's "CUDA Version:", which is the driver's own.
_CUDA = (
    r"compilation tools, release (?P<major>1[0-3])\.(?P<minor>\d)\b",
    r"\bcuda-(?P<major>1[0-3])\.(?P<minor>\d)\b",
    r"\bcuda (?P<major>1[0-3])\.(?P<minor>\d)\b",
    r"\bnvidia/cuda:(?P<major>1[0-3])\.(?P<minor>\d)\b",
)
# What a driver that runs a newer CUDA's machine code, but not the PTX it makes, reports.
_PTX = (
    r"no kernel image is available",
    r"kernel image is invalid",
    r"CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    r"PTX was compiled with an unsupported toolchain",
)


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


class DriverFact(Fact):
    """A driver version ("driver"), a kernel/DSO pair ("mismatch"), a CUDA release ("cuda") or a kernel that
    could not load ("ptx") a line states."""

    def value(self, match: re.Match[str]) -> object:
        if self.kind == "mismatch":
            return _numbers(match.group("v")), _numbers(match.group("dso"))
        if self.kind == "cuda":
            return int(match.group("major")), int(match.group("minor"))
        if self.kind == "ptx":
            return True
        return _numbers(match.group("v"))


@lru_cache(maxsize=1)
def facts() -> tuple[Fact, ...]:
    found: list[Fact] = []
    for kind, texts in (("driver", _DRIVER), ("mismatch", _MISMATCH), ("cuda", _CUDA), ("ptx", _PTX)):
        found += [
            DriverFact(f"{kind}:{i}", kind, (compile_pattern(f"{kind} fact", t),))
            for i, t in enumerate(texts)
        ]
    return tuple(found)


@dataclass
class DriverFacts:
    driver: tuple[tuple[int, ...], Line] | None = None  # the first driver version stated
    mismatch: tuple[tuple[int, ...], tuple[int, ...], Line] | None = None
    cuda: tuple[Capability, Line] | None = None  # the first CUDA release named
    ptx: Line | None = None  # the first kernel that could not load

    def add(self, fact: Fact, line: Line, value: object) -> None:
        if fact.kind == "driver" and self.driver is None and isinstance(value, tuple):
            self.driver = (value, line)
        elif fact.kind == "mismatch" and self.mismatch is None and isinstance(value, tuple):
            kernel, dso = value
            self.mismatch = (kernel, dso, line)
            if self.driver is None:
                self.driver = (kernel, line)
        elif fact.kind == "cuda" and self.cuda is None and isinstance(value, tuple):
            self.cuda = (value, line)
        elif fact.kind == "ptx" and self.ptx is None:
            self.ptx = line

    def judge(
        self, tf_version: Capability | None, tf_line: Line | None, contexts: set[str], failed: bool
    ) -> Verdict | None:
        if contexts & {"windows", "wsl2"}:
            return None  # Windows drivers are numbered differently; the tables are Linux's
        if self.mismatch is not None and "container" in contexts:
            kernel, dso, line = self.mismatch
            if dso > kernel:
                return Verdict(
                    f"the host's kernel driver is {_dotted(kernel)}, older than the libcuda {_dotted(dso)}"
                    " loaded in the container: the image brings a CUDA forward-compatibility libcuda"
                    " (cuda-compat) for a newer CUDA than the host driver supports, which runs only on"
                    " data-center GPUs with a supported driver branch",
                    [line],
                )
        if self.driver is not None and self.cuda is not None and self.ptx is not None:
            verdict = _ptx_needs_newer_driver(self.driver, self.cuda, self.ptx)
            if verdict is not None:
                return verdict
        if self.driver is None or tf_version is None or tf_line is None or not failed:
            return None
        build = load().build_of(tf_version)
        if build is None:
            return None
        driver, line = self.driver
        minimum = _minimum_driver(build.cuda)
        if minimum is None or driver >= minimum[0]:
            return None
        return Verdict(
            f"driver {_dotted(driver)} is older than {show_version(minimum[0])}, {minimum[1]};"
            f" TensorFlow {shown(tf_version)} is built with CUDA {shown(build.cuda)}",
            sorted({line, tf_line}, key=lambda x: x.number),
        )


def _ptx_needs_newer_driver(
    driver_seen: tuple[tuple[int, ...], Line], cuda_seen: tuple[Capability, Line], ptx: Line
) -> Verdict | None:
    """CUDA 11+ minor-version compatibility runs a newer toolkit's machine code on an older driver of the same
    major, but PTX that toolkit makes needs the toolkit's own driver: "no kernel image" there."""
    (driver, driver_line), (cuda, cuda_line) = driver_seen, cuda_seen
    needed = TOOLKIT_DRIVER.get(cuda)
    floor = MINIMUM_DRIVER.get(cuda[0])
    if needed is None or floor is None or not floor[0] <= driver < needed:
        return None
    return Verdict(
        f"driver {_dotted(driver)} runs CUDA {shown(cuda)} (named in the log) only through minor-version"
        f" compatibility: its machine code loads, PTX that CUDA {shown(cuda)} made does not; that needs"
        f" driver {show_version(needed)} or newer",
        sorted({driver_line, cuda_line, ptx}, key=lambda x: x.number),
    )


def _minimum_driver(cuda: Capability) -> tuple[tuple[int, ...], str] | None:
    """The oldest Linux driver that runs CUDA `cuda` at all: from CUDA 11 on, the major's minor-version
    compatibility floor; before, the toolkit's own driver (there was no minor-version compatibility)."""
    if cuda[0] >= 11 and cuda[0] in MINIMUM_DRIVER:
        return MINIMUM_DRIVER[cuda[0]][0], f"the oldest that runs CUDA {cuda[0]}.x"
    if cuda in TOOLKIT_DRIVER:
        return TOOLKIT_DRIVER[cuda], f"the oldest that runs CUDA {shown(cuda)}"
    return None


def _dotted(version: tuple[int, ...]) -> str:
    """A driver version as NVIDIA writes it ("460.73.01"; TensorFlow prints "460.73.1")."""
    return show_version(version)
