"""The TensorFlow layer: TensorFlow is imported here and nowhere above, in a child process with a deadline.

It answers: does it import (20), was it built with CUDA (21), can the driver run the build's CUDA (13), does
the build carry code for each GPU (23), and does TensorFlow see the GPUs the driver sees (22)?
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tfdist_validate.checks import ptx_jit
from tfdist_validate.checks.cuda_libraries import check_cuda_libraries
from tfdist_validate.checks.devices import canonical
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.cuda_compat import (
    MINIMUM_DRIVER,
    PTX_FAILS,
    Compat,
    coverage,
    driver_runs_cuda,
    installed_cuda,
    show_version,
    version_tuple,
)
from tfdist_validate.host.gpus import DriverSnapshot, cuda_version_text
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes.tf_facts import TfFacts
from tfdist_validate.result import Layer, Outcome, failed, passed, skipped, warned
from tfdist_validate.runner import DRY_RUN, Check

TF_TIMEOUT_S = 300.0  # a cold import on a loaded node takes tens of seconds; a hang takes forever
_CUDA_LOG = re.compile(
    r"^.*(cuInit|Cannot dlopen|Could not find cuda|Could not load dynamic library).*$", re.M
)


def _tf(ctx: Context) -> TfFacts:
    return ctx.facts.need_tensorflow()


def _build(facts: TfFacts) -> str:
    info = facts.build_info
    if not facts.built_with_cuda:
        return "CPU-only build"
    caps = ", ".join(facts.capabilities) or "none listed"
    return f"CUDA {info.get('cuda_version')}, cuDNN {info.get('cudnn_version')}, kernels for {caps}"


def check_import(ctx: Context) -> Outcome:
    timeout = max(1.0, min(TF_TIMEOUT_S, ctx.deadline.remaining()))
    facts = ctx.tf.facts(timeout, list_gpus=not ctx.dry_run)
    ctx.facts.tensorflow = facts
    ctx.section("tensorflow").update(facts.to_json())
    if facts.timed_out:
        # A deadline cut the stage short: the contract's TIMEOUT, whichever stage it hit (import included).
        return failed(
            ExitCode.TIMEOUT,
            f"TensorFlow could not be inspected: {facts.probe_error}",
            "a cold import on a loaded node takes tens of seconds: raise --timeout if it was short; a hang"
            " while TensorFlow lists GPUs usually means a broken driver: run `nvidia-smi` and"
            " `sudo dmesg | grep -i xid`",
            {"log": facts.log[-2000:]},
        )
    if facts.probe_error:
        return failed(
            ExitCode.TF_IMPORT_FAILED,
            f"TensorFlow could not be inspected: {facts.probe_error}",
            "a hang while TensorFlow lists GPUs usually means a broken driver: run `nvidia-smi` and"
            " `sudo dmesg | grep -i xid`",
            {"log": facts.log[-2000:]},
        )
    if not facts.imported:
        missing = facts.missing_libraries()
        named = f" (missing: {', '.join(missing)})" if missing else ""
        return failed(
            ExitCode.TF_IMPORT_FAILED,
            f"TensorFlow cannot be imported: {facts.import_error}{named}",
            "install it in this Python environment: `pip install 'tensorflow[and-cuda]'` (Linux x86_64), and"
            " check that its version matches this Python",
            {"log": facts.log[-2000:]},
        )
    return passed(f"TensorFlow {facts.version} ({_build(facts)})")


def check_cuda_build(ctx: Context) -> Outcome:
    facts = _tf(ctx)
    if ctx.dry_run:
        return skipped(f"{DRY_RUN}; TensorFlow {facts.version}: {_build(facts)}")
    if not facts.built_with_cuda:
        return failed(
            ExitCode.TF_NOT_CUDA_BUILD,
            f"TensorFlow {facts.version} was built without CUDA",
            "install the CUDA build: `pip install 'tensorflow[and-cuda]'` on Linux x86_64 (the tensorflow-cpu"
            " package, macOS and native Windows builds after 2.10 have no CUDA; on Windows use WSL2)",
        )
    return passed(f"TensorFlow {facts.version}: {_build(facts)}")


def check_driver_compat(ctx: Context) -> Outcome:
    facts = _tf(ctx)
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


def _gpu_capabilities(ctx: Context, facts: TfFacts) -> list[tuple[int, str, tuple[int, int]]]:
    """(index, name, compute capability) of each GPU, from NVML, else from TensorFlow's device details."""
    snapshot = ctx.facts.driver
    gpus = [(g.index, g.name or "GPU", g.cc_tuple) for g in (snapshot.gpus if snapshot else ()) if g.cc_tuple]
    if not gpus:  # no NVML: TensorFlow's own device details carry the capability
        for position, detail in enumerate(facts.gpu_details):
            cc = detail.get("compute_capability")
            if isinstance(cc, (list, tuple)) and len(cc) == 2:
                gpus.append((position, str(detail.get("device_name", "GPU")), (int(cc[0]), int(cc[1]))))
    return gpus


def jit_capabilities(ctx: Context) -> list[str]:
    """The compute capabilities ("9.0") this build reaches only through PTX: a first start JIT-compiles."""
    facts = ctx.facts.tensorflow
    if facts is None or ctx.dry_run or not facts.capabilities:
        return []
    found = [
        cc for _, _, cc in _gpu_capabilities(ctx, facts) if coverage(cc, facts.capabilities).status == "ptx"
    ]
    return [f"{major}.{minor}" for major, minor in dict.fromkeys(found)]


def _tf_used(ctx: Context, facts: TfFacts) -> list[tuple[int, str, tuple[int, int]]]:
    """The GPUs this run will use, from TensorFlow's own device details: what CUDA_VISIBLE_DEVICES left and
    TensorFlow did not ignore ("Ignoring visible gpu device ... minimum required Cuda capability"), narrowed
    by --devices. Empty when TensorFlow gave no capability."""
    used = []
    wanted = {canonical(d) for d in ctx.settings.devices or ()}
    for position, detail in enumerate(facts.gpu_details):
        cc = detail.get("compute_capability")
        if isinstance(cc, (list, tuple)) and len(cc) == 2 and (not wanted or f"/gpu:{position}" in wanted):
            used.append((position, str(detail.get("device_name", "GPU")), (int(cc[0]), int(cc[1]))))
    return used


def _unused(
    every: list[tuple[int, str, tuple[int, int]]], used: list[tuple[int, str, tuple[int, int]]]
) -> list[tuple[int, str, tuple[int, int]]]:
    """NVML's GPUs beyond those in use, matched by compute capability (TensorFlow's details carry no bus id
    or UUID to match by): a GPU of a capability nobody uses is certainly not used."""
    left = [cc for _, _, cc in used]
    unused = []
    for gpu in every:
        if gpu[2] in left:
            left.remove(gpu[2])
        else:
            unused.append(gpu)
    return unused


def check_compute_capability(ctx: Context) -> Outcome:
    facts = _tf(ctx)
    every = _gpu_capabilities(ctx, facts)
    used = _tf_used(ctx, facts)
    # judge the GPUs the run uses; an unsupported GPU it does not use (a display card, a GPU hidden by
    # CUDA_VISIBLE_DEVICES or --devices) is a warning, not 23
    gpus = used or every
    build = facts.capabilities
    if not gpus or not build:
        return skipped("no compute capability known to compare with the build's list")
    unusable = [
        f"GPU {i} ({name}, compute capability {cc[0]}.{cc[1]})"
        for i, name, cc in (_unused(every, used) if used else [])
        if coverage(cc, build).status == "none"
    ]
    jit: list[str] = []
    for index, name, cc in gpus:
        cover = coverage(cc, build)
        text = f"GPU {index} ({name}, compute capability {cc[0]}.{cc[1]})"
        if cover.status == "none":
            return failed(
                ExitCode.UNSUPPORTED_GPU,
                f"{text} is not supported by TensorFlow {facts.version}, built for {', '.join(build)}",
                f"use a TensorFlow build that includes sm_{cc[0]}{cc[1]} (or build it with"
                f" TF_CUDA_COMPUTE_CAPABILITIES={cc[0]}.{cc[1]}), or a GPU this build supports",
            )
        if cover.status == "ptx" and cc[0] in PTX_FAILS:
            return failed(
                ExitCode.UNSUPPORTED_GPU,
                f"{text} has no native code in TensorFlow {facts.version} (built for {', '.join(build)}); its"
                f" PTX {cover.via} fails to load on this generation (CUDA_ERROR_INVALID_PTX, then"
                f" CUDA_ERROR_INVALID_HANDLE): {PTX_FAILS[cc[0]][0]}",
                f"use a TensorFlow build with sm_{cc[0]}{cc[1]} code (NVIDIA's NGC TensorFlow container, or"
                f" build with TF_CUDA_COMPUTE_CAPABILITIES={cc[0]}.{cc[1]});"
                f" see {', '.join(PTX_FAILS[cc[0]])}",
            )
        if cover.status == "ptx":
            jit.append(f"{text} via PTX {cover.via}")
    if unusable:
        return warned(
            f"{', '.join(unusable)}: not supported by TensorFlow {facts.version} (built for"
            f" {', '.join(build)}) and not used by this run, which has"
            f" {', '.join(f'/gpu:{i} cc {c[0]}.{c[1]}' for i, _, c in used)}",
            "nothing to do for this run; hide the GPU from CUDA (CUDA_VISIBLE_DEVICES) in other jobs too",
        )
    if jit:
        # said up front, before the smoke test pays it: the cost, the cache, and whether --timeout allows it
        capabilities = list(
            dict.fromkeys(f"{c[0]}.{c[1]}" for _, _, c in gpus if coverage(c, build).status == "ptx")
        )
        cache = ctx.facts.runtime.jit_cache if ctx.facts.runtime else None
        timeout = ctx.settings.timeout if ctx.command == "run" else None  # `check` runs no kernel
        found = ptx_jit.facts(capabilities, cache, timeout)
        ctx.section("tensorflow")["ptx_jit"] = found
        fixes = found["cache_fixes"]
        return warned(
            f"{'; '.join(jit)}: {ptx_jit.first_start_note(capabilities, cache, timeout)}",
            "expected for GPUs newer than the build; "
            + ("; ".join(fixes) if fixes else "the JIT cache keeps the compiled kernels for the next start"),
            {"ptx_jit": found},
        )
    return passed(f"native kernels for every GPU ({', '.join(f'{c[0]}.{c[1]}' for _, _, c in gpus)})")


def check_gpus_visible(ctx: Context) -> Outcome:
    facts = _tf(ctx)
    snapshot = ctx.facts.driver
    runtime = ctx.facts.runtime
    driver_count = len([g for g in snapshot.gpus if not g.error]) if snapshot and snapshot.gpus else 0
    if not driver_count and runtime:
        driver_count = len(runtime.gpu_nodes) or int(bool(runtime.wsl and runtime.wsl.dxg))
    seen = len(facts.gpus)
    if seen == 0:
        return _none_seen(facts, driver_count, runtime)
    names = ", ".join(facts.gpus)
    if driver_count and seen < driver_count:
        mask = runtime.cuda_mask.value if runtime else None
        why = f" (CUDA_VISIBLE_DEVICES={mask})" if mask is not None else ""
        return warned(
            f"TensorFlow sees {seen} of the driver's {driver_count} GPUs{why}: {names}",
            "GPUs TensorFlow skips are named in its log (e.g. a compute capability below its minimum)",
        )
    return passed(f"TensorFlow sees {seen} GPU(s): {names}")


def _none_seen(facts: TfFacts, driver_count: int, runtime: RuntimeFacts | None) -> Outcome:
    drivers = f"the driver sees {driver_count} GPU(s)" if driver_count else "the driver is reachable"
    mask = runtime.cuda_mask if runtime else None
    if mask is not None and mask.hides_all:
        return failed(
            ExitCode.TF_NO_GPU,
            f"{drivers}, TensorFlow none: {mask.reason}, which hides every GPU",
            "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. CUDA_VISIBLE_DEVICES=0,1)",
        )
    missing = facts.missing_libraries()
    cuda = facts.build_info.get("cuda_version")
    cudnn = facts.build_info.get("cudnn_version")
    install = (
        f"install the CUDA {cuda} / cuDNN {cudnn} libraries this TensorFlow needs: `pip install"
        f" 'tensorflow[and-cuda]=={facts.version}'`, or put them on LD_LIBRARY_PATH"
    )
    evidence = [m.group(0).strip() for m in _CUDA_LOG.finditer(facts.log)][:5]
    if missing:
        return failed(
            ExitCode.TF_NO_GPU,
            f"{drivers}, TensorFlow none: it could not load {', '.join(missing)}",
            install,
            {"log": evidence},
        )
    said = f" (TensorFlow's log: {evidence[-1]})" if evidence else ""
    return failed(ExitCode.TF_NO_GPU, f"{drivers}, TensorFlow none{said}", install, {"log": evidence})


_IMPORT = "tensorflow.import"
_BUILD = "tensorflow.cuda_build"
_LIBRARIES = "tensorflow.cuda_libraries"
CHECKS = (
    Check(
        _IMPORT, Layer.TENSORFLOW, check_import, requires=("runtime.gpu_access", "driver.nvml", "health.gpus")
    ),
    Check(_BUILD, Layer.TENSORFLOW, check_cuda_build, requires=(_IMPORT,)),
    Check(_LIBRARIES, Layer.TENSORFLOW, check_cuda_libraries, requires=(_IMPORT,)),
    Check("tensorflow.driver_compat", Layer.TENSORFLOW, check_driver_compat, (_BUILD,), gpu_only=True),
    Check("tensorflow.compute_cap", Layer.TENSORFLOW, check_compute_capability, (_BUILD,), gpu_only=True),
    Check(
        "tensorflow.gpus_visible",
        Layer.TENSORFLOW,
        check_gpus_visible,
        requires=(_BUILD, _LIBRARIES, "tensorflow.driver_compat", "tensorflow.compute_cap"),
        gpu_only=True,
    ),
)
