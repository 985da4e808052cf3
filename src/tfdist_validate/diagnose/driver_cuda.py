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
from dataclasses import dataclass, field
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
)
_MISMATCH = (
    rf"kernel version {_VERSION} does not match DSO version (?P<dso>\d{{3}}\.\d{{1,3}}(?:\.\d{{1,3}})?)",
)


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


class DriverFact(Fact):
    """A driver version (kind "driver") or a kernel/DSO pair (kind "mismatch") a line states."""

    def value(self, match: re.Match[str]) -> object:
        if self.kind == "mismatch":
            return _numbers(match.group("v")), _numbers(match.group("dso"))
        return _numbers(match.group("v"))


@lru_cache(maxsize=1)
def facts() -> tuple[Fact, ...]:
    found: list[Fact] = []
    for kind, texts in (("driver", _DRIVER), ("mismatch", _MISMATCH)):
        found += [
            DriverFact(f"{kind}:{i}", kind, (compile_pattern(f"{kind} fact", t),))
            for i, t in enumerate(texts)
        ]
    return tuple(found)


@dataclass
class DriverFacts:
    driver: tuple[tuple[int, ...], Line] | None = None  # the first driver version stated
    mismatch: tuple[tuple[int, ...], tuple[int, ...], Line] | None = None
    seen: list[Line] = field(default_factory=list)

    def add(self, fact: Fact, line: Line, value: object) -> None:
        if fact.kind == "driver" and self.driver is None and isinstance(value, tuple):
            self.driver = (value, line)
        elif fact.kind == "mismatch" and self.mismatch is None and isinstance(value, tuple):
            kernel, dso = value
            self.mismatch = (kernel, dso, line)
            if self.driver is None:
                self.driver = (kernel, line)

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


def _minimum_driver(cuda: Capability) -> tuple[tuple[int, ...], str] | None:
    """The oldest Linux driver that runs CUDA `cuda` at all: from CUDA 11 on, the major's minor-version
    compatibility floor; before, the toolkit's own driver (there was no minor-version compatibility)."""
    if cuda[0] >= 11 and cuda[0] in MINIMUM_DRIVER:
        return MINIMUM_DRIVER[cuda[0]][0], f"the oldest that runs CUDA {cuda[0]}.x"
    if cuda in TOOLKIT_DRIVER:
        return TOOLKIT_DRIVER[cuda], f"the oldest that runs CUDA {shown(cuda)}"
    return None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)
