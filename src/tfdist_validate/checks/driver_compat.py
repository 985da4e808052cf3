"""Can this driver run the CUDA that TensorFlow was built with, and the CUDA of the libraries installed (13)?

Two figures: the build's CUDA (tf.sysconfig.get_build_info()) and the newest CUDA among the libraries that
are really installed (the nvidia-* wheels, and what cudart / NVRTC / nvJitLink report themselves). A library
newer than the driver within the same major version runs its machine code but not the PTX it emits at run time
(CUDA_ERROR_UNSUPPORTED_PTX_VERSION), so that is a warning; a newer major version is 13.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tfdist_validate.checks.gpu_capabilities import jit_capabilities
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.cuda_compat import (
    MINIMUM_DRIVER,
    Compat,
    driver_runs_cuda,
    installed_cuda,
    show_version,
    version_tuple,
)
from tfdist_validate.host.gpus import DriverSnapshot, cuda_version_text
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes.tf_facts import TfFacts
from tfdist_validate.result import Outcome, failed, passed, warned


def check_driver_compat(ctx: Context) -> Outcome:
    facts = ctx.facts.need_tensorflow()
    snapshot = ctx.facts.driver
    runtime = ctx.facts.runtime
    build_cuda = facts.cuda_version
    if snapshot is None or not snapshot.cuda_version or not build_cuda:
        return warned(
            f"not compared: the driver's CUDA version is {snapshot.cuda_version if snapshot else None},"
            f" the build's {build_cuda}",
            "NVML (libnvidia-ml.so.1) reports the driver's CUDA version; make it available to compare",
        )
    windows = bool(runtime and runtime.wsl2)  # under WSL2 the version is the Windows driver's
    # NVML reports the kernel driver's CUDA; a forward-compatibility libcuda (the cuda-compat package on
    # data-center GPUs) loaded instead gives a newer one, and that is the one CUDA programs run against
    forward = _forward_compat_cuda(facts, snapshot)
    compat = driver_runs_cuda(snapshot.driver_version, forward or snapshot.cuda_version, build_cuda, windows)
    details = {
        "driver": snapshot.driver_version,
        "driver_cuda": snapshot.cuda_version,
        "build_cuda": build_cuda,
    }
    if forward:
        details["libcuda_cuda"] = forward
        compat = replace(
            compat,
            reason=f"{compat.reason} (the loaded libcuda is a forward-compatibility package giving CUDA"
            f" {forward}; the kernel driver's own is CUDA {snapshot.cuda_version})",
        )
    if not compat.ok:
        return failed(ExitCode.DRIVER_TOO_OLD, compat.reason, _upgrade_hint(build_cuda, runtime), details)
    libraries = _installed_libraries(facts, snapshot, forward, windows, details)
    if libraries is not None and not libraries.ok:
        return failed(
            ExitCode.DRIVER_TOO_OLD,
            f"{libraries.reason}; TensorFlow's build: {compat.reason}",
            _libraries_hint(details, build_cuda, runtime),
            details,
        )
    jit = jit_capabilities(ctx) if compat.minor_compat else []
    if jit:
        # Minor-version compatibility runs the build's cubins, never its PTX: PTX from a newer toolkit fails
        # to load (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) on an older driver. A GPU the build reaches only via
        # PTX (H100/H200, cc 9.0, on builds that ship compute_90) has no kernel at all on this driver.
        return failed(
            ExitCode.DRIVER_TOO_OLD,
            f"{_driver_named(snapshot.driver_version, runtime)} supports CUDA {snapshot.cuda_version}, older"
            f" than the build's CUDA {build_cuda}, and the build carries only PTX for compute capability"
            f" {', '.join(jit)}: that PTX cannot be JIT-compiled by this driver"
            " (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), so these GPUs have no kernels",
            _upgrade_hint(build_cuda, runtime),
            details | {"ptx_only": jit},
        )
    if compat.minor_compat:
        reason = compat.reason + (f"; {libraries.reason}" if libraries is not None else "")
        return warned(reason, _upgrade_hint(build_cuda, runtime), details)
    if libraries is not None and libraries.minor_compat:
        return warned(
            f"TensorFlow's build: {compat.reason}; but {libraries.reason}",
            _libraries_hint(details, build_cuda, runtime),
            details,
        )
    installed = f"; {libraries.reason}" if libraries is not None else ""
    return passed(compat.reason + installed, details)


def _installed_libraries(
    facts: TfFacts, snapshot: DriverSnapshot, forward: str | None, windows: bool, details: dict[str, Any]
) -> Compat | None:
    """The driver judged against the CUDA libraries installed beside TensorFlow (the nvidia-* wheels, or what
    LD_LIBRARY_PATH gives), which may be newer than the CUDA TensorFlow was built with: their run-time
    compilers (NVRTC in cuDNN's runtime fusion, nvJitLink, ptxas) emit PTX of their own CUDA, which only a
    driver of that CUDA loads. None when nothing says which CUDA they are."""
    installed = installed_cuda(facts.cuda_libraries, facts.cuda_wheels)
    if installed is None:
        return None
    version, evidence = installed
    details["installed_cuda"] = version
    details["installed_cuda_from"] = evidence
    compat = driver_runs_cuda(snapshot.driver_version, forward or snapshot.cuda_version, version, windows)
    said = f"the installed CUDA libraries are CUDA {version} ({', '.join(evidence)})"
    if compat.ok and not compat.minor_compat:
        return replace(compat, reason=f"{said}: the driver supports them")
    if not compat.ok:
        return replace(compat, reason=f"{said}: {compat.reason}")
    return replace(
        compat,
        reason=f"{said}, newer than the driver's CUDA {forward or snapshot.cuda_version}: they run through"
        " minor-version compatibility, but PTX they generate at run time (NVRTC, nvJitLink) fails to load"
        " on this driver (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
    )


def _libraries_hint(details: Mapping[str, Any], build_cuda: str, runtime: RuntimeFacts | None) -> str:
    numbers = version_tuple(build_cuda) or (0, 0)
    release = ".".join(map(str, numbers[:2]))
    wheels = " ".join(
        f"'nvidia-{name}-cu{numbers[0]}=={release}.*'" for name in ("cuda-runtime", "cuda-nvrtc", "nvjitlink")
    )
    return (
        f"{_upgrade_driver(str(details.get('installed_cuda')), runtime)}, or install the CUDA wheels of"
        f" TensorFlow's build (CUDA {release}): `pip install {wheels}` and the other nvidia-* wheels of that"
        " release (tfdist-validate's requirements/cuda.txt pins the set)"
    )


def _forward_compat_cuda(facts: TfFacts, snapshot: DriverSnapshot) -> str | None:
    """The loaded libcuda's CUDA version where it is newer than the kernel driver's (NVML), else None."""
    loaded, kernel = facts.libcuda_version, snapshot.cuda_driver_version
    if loaded is None or kernel is None or loaded <= kernel:
        return None
    return cuda_version_text(loaded)


def _driver_named(version: str | None, runtime: RuntimeFacts | None) -> str:
    """ "driver 535.161.08 (branch R535)": Linux data-center drivers are released and supported per branch,
    named by the first number. A Windows (WSL2) driver's number does not name its branch, so none is given."""
    numbers = version_tuple(version)
    if not numbers or (runtime is not None and runtime.wsl2):
        return f"driver {version}"
    return f"driver {version} (branch R{numbers[0]})"


def _upgrade_hint(build_cuda: str, runtime: RuntimeFacts | None) -> str:
    return f"{_upgrade_driver(build_cuda, runtime)}, or use a TensorFlow built for an older CUDA"


def _upgrade_driver(cuda: str, runtime: RuntimeFacts | None) -> str:
    major = (version_tuple(cuda) or (0,))[0]
    floors = MINIMUM_DRIVER.get(major)
    wsl = runtime is not None and runtime.wsl2
    system, minimum = ("Windows", floors[1]) if wsl and floors else ("Linux", floors[0] if floors else ())
    floor = f" (CUDA {major}.x: {system} >= {show_version(minimum)})" if floors else ""
    in_container = runtime is not None and runtime.in_container
    where = (
        "the Windows NVIDIA driver" if wsl else "the host's NVIDIA driver" if in_container else "the driver"
    )
    return f"upgrade {where} to one that supports CUDA {cuda}{floor}"
