"""The TensorFlow layer: TensorFlow is imported here and nowhere above, in a child process with a deadline.

It answers: does it import (20), was it built with CUDA (21), can the driver run the build's CUDA (13), does
the build carry code for each GPU (23), and does TensorFlow see the GPUs the driver sees (22)?
"""

from __future__ import annotations

import re

from tfdist_validate.checks import ptx_jit
from tfdist_validate.checks.cuda_libraries import check_cuda_libraries
from tfdist_validate.checks.devices import canonical
from tfdist_validate.checks.driver_compat import check_driver_compat
from tfdist_validate.checks.gpu_capabilities import gpu_capabilities
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.cuda_compat import (
    PTX_FAILS,
    coverage,
)
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
    every = gpu_capabilities(ctx, facts)
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
    Check(
        "tensorflow.driver_compat",
        Layer.TENSORFLOW,
        check_driver_compat,
        (_BUILD,),
        gpu_only=True,
    ),
    Check("tensorflow.compute_cap", Layer.TENSORFLOW, check_compute_capability, (_BUILD,), gpu_only=True),
    Check(
        "tensorflow.gpus_visible",
        Layer.TENSORFLOW,
        check_gpus_visible,
        requires=(_BUILD, _LIBRARIES, "tensorflow.driver_compat", "tensorflow.compute_cap"),
        gpu_only=True,
    ),
)
