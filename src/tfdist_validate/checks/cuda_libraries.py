"""Does every CUDA library TensorFlow opens on a GPU host load here, from where, in which version?

Read by the TensorFlow child without a GPU (probes/cuda_libs.py), so a dry run of the CUDA image shows the
same list a GPU host would get. On a GPU host a missing required library is 22 (TensorFlow then registers no
GPU: "Cannot dlopen some GPU libraries"), named with where it was looked for; in a dry run it is reported and
nothing more. libcuda and NVML come from the host's driver: absent in a container without GPUs, as expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Outcome, failed, passed, skipped, warned


def _named(library: Mapping[str, Any]) -> str:
    version = f" {library['version']}" if library.get("version") else ""
    wheel = f", {library['wheel']} {library['wheel_version']}" if library.get("wheel") else ""
    return f"{library['soname']}{version} ({library.get('found_via')}{wheel})"


def _problem(library: Mapping[str, Any]) -> str:
    if library.get("path"):
        return f"{library['soname']} at {library['path']} does not load: {library.get('error')}"
    stray = library.get("path_outside_search")
    elsewhere = f"; {library.get('wheel')} installed it at {stray}" if stray else ""
    return f"{library['soname']} ({library.get('role')}) is {library.get('error') or 'not found'}{elsewhere}"


def _hint(broken: list[Mapping[str, Any]], version: str | None) -> str:
    strays = [str(lib["path_outside_search"]) for lib in broken if lib.get("path_outside_search")]
    if strays:
        folders = ":".join(dict.fromkeys(str(Path(p).parent) for p in strays))
        return (
            "the wheel's folder is not where the library that opens it looks: add it to the search path,"
            f" e.g. `export LD_LIBRARY_PATH={folders}:$LD_LIBRARY_PATH`"
        )
    return f"`pip install 'tensorflow[and-cuda]=={version}'` installs them all"


def check_cuda_libraries(ctx: Context) -> Outcome:
    facts = ctx.facts.need_tensorflow()
    if not facts.built_with_cuda:
        return skipped(f"TensorFlow {facts.version} is a CPU-only build: it loads no CUDA library")
    if facts.cuda_libraries is None:
        return skipped("the CUDA libraries were not inspected (a report from an older version)")
    wheel_libs = [lib for lib in facts.cuda_libraries if not lib.get("host")]
    host_libs = [lib for lib in facts.cuda_libraries if lib.get("host")]
    broken = [lib for lib in wheel_libs if not lib.get("loads")]
    required = [lib for lib in broken if lib.get("required")]
    details = {
        "libraries": [dict(lib) for lib in facts.cuda_libraries],
        "cuda_wheels": dict(facts.cuda_wheels),
    }
    absent_host = [lib["soname"] for lib in host_libs if not lib.get("path")]
    host_note = (
        f"; {', '.join(absent_host)} from the host's driver: absent here"
        + (" (expected in a dry run without GPUs)" if ctx.dry_run else "")
        if absent_host
        else ""
    )
    if required and ctx.dry_run:
        return skipped(
            "dry run: TensorFlow's CUDA libraries do not all load here"
            f" ({'; '.join(map(_problem, required))}); on a GPU host this is 22",
            details,
        )
    if required:
        return failed(
            ExitCode.TF_NO_GPU,
            f"TensorFlow cannot open {len(required)} CUDA"
            f" librar{'y' if len(required) == 1 else 'ies'} it needs to use a GPU:"
            f" {'; '.join(map(_problem, required))}",
            "install the CUDA libraries of this TensorFlow:"
            f" `pip install 'tensorflow[and-cuda]=={facts.version}'` (the nvidia-* wheels TensorFlow's"
            " RUNPATH points at), or put a CUDA"
            f" {facts.build_info.get('cuda_version')} / cuDNN {facts.build_info.get('cudnn_version')} install"
            " on LD_LIBRARY_PATH",
            details,
        )
    loaded = ", ".join(_named(lib) for lib in wheel_libs if lib.get("loads"))
    summary = f"{len(wheel_libs) - len(broken)} CUDA libraries load: {loaded}{host_note}"
    if broken:
        return warned(
            f"{summary}; optional ones that do not: {'; '.join(map(_problem, broken))}",
            "only what uses them fails (the profiler without CUPTI, cuDNN's runtime-compiled kernels without"
            f" NVRTC); {_hint(broken, facts.version)}",
            details,
        )
    # libcuda and NVML are judged by the runtime and driver layers; here their absence is information
    return passed(summary, details)
