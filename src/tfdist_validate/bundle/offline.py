"""What a bug report can know with no GPU and without importing TensorFlow: the installed packages' versions
(from their metadata), the kernel driver (/proc/driver/nvidia/version under --root) and the image.

A bundle is made on exactly the nodes where a layer failed and the layers above it were skipped; the
report's "TensorFlow: unknown" next to a pip freeze that lists it helps nobody.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfdist_validate.host.runtime import parse_proc_driver_version
from tfdist_validate.report.json_report import image_facts

# The distributions that install the `tensorflow` package, in the order a report names them.
TENSORFLOW_DISTRIBUTIONS = (
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tensorflow-intel",
    "intel-tensorflow",
    "tf-nightly",
)
# NVIDIA's CUDA wheels, as `tensorflow[and-cuda]` installs them: nvidia-cudnn-cu12, nvidia-nccl-cu12, ...
_CUDA_WHEEL = re.compile(r"^nvidia-[a-z0-9-]+-cu\d+$")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503: "nvidia_cudnn_cu12" is "nvidia-cudnn-cu12"


def installed(path: Sequence[str] | None = None) -> dict[str, str]:
    """Every installed distribution's normalized name -> version, from its metadata; nothing is imported.
    `path`: where to look instead of sys.path (tests)."""
    found: dict[str, str] = {}
    dists = (
        importlib.metadata.distributions(path=list(path))
        if path is not None
        else importlib.metadata.distributions()
    )
    for dist in dists:
        name = dist.metadata["Name"]
        if name and dist.version:
            found.setdefault(_normalized(name), dist.version)  # the first on the path is the one imported
    return found


@dataclass(frozen=True)
class OfflineFacts:
    tensorflow: tuple[str, str] | None  # (distribution, version)
    cuda_wheels: tuple[tuple[str, str], ...]
    kernel_driver: str | None  # the version on /proc/driver/nvidia/version's NVRM line
    image: Mapping[str, str] | None  # TFDIST_IMAGE_VERSION / _REVISION / _SOURCE

    def to_json(self) -> dict[str, Any]:
        return {
            "tensorflow": dict([self.tensorflow]) if self.tensorflow else None,
            "cuda_wheels": dict(self.cuda_wheels),
            "kernel_driver": self.kernel_driver,
            "image": dict(self.image) if self.image else None,
        }


def _kernel_driver(root: str) -> str | None:
    try:
        text = (Path(root) / "proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace")
    except OSError:  # no NVIDIA kernel module here, or no GPU passed into this container
        return None
    return parse_proc_driver_version(text)[1]


def collect(root: str, env: Mapping[str, str], path: Sequence[str] | None = None) -> OfflineFacts:
    packages = installed(path)
    tensorflow = next(((d, packages[d]) for d in TENSORFLOW_DISTRIBUTIONS if d in packages), None)
    wheels = tuple(sorted((name, version) for name, version in packages.items() if _CUDA_WHEEL.match(name)))
    return OfflineFacts(tensorflow, wheels, _kernel_driver(root), image_facts(env))
