"""A first start on GPUs this TensorFlow build reaches only through PTX (H100 / H200 on TF 2.21: sm_89 code
and compute_90 PTX): what it costs, whether CUDA can keep what it compiles, and what a deadline that ends
during that compile means.

TensorFlow says so itself when it creates the device (tensorflow/core/common_runtime/gpu/gpu_device.cc; the
string is in TF 2.21.0's libtensorflow_framework.so.2): "TensorFlow was not built with CUDA kernel binaries
compatible with compute capability 9.0. CUDA kernels will be jit-compiled from PTX, which could take 30
minutes or longer." The driver keeps the compiled kernels in CUDA's JIT cache (host/jit_cache.py); a second
start with a usable, large enough cache loads them instead of compiling again.
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.host.jit_cache import CUDA_MAX_MAXSIZE, JitCache

TF_JIT_WARNING = "CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer"
# TensorFlow's own "30 minutes or longer", plus the rest of a run: what --timeout a first start should get
FIRST_START_TIMEOUT_S = 2400.0


def _mib(size: int) -> str:
    return f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def cache_state(cache: JitCache | None) -> str:
    """Where the cache is and what it can do, e.g. "/cuda-cache (writable, empty, up to 4 GiB ...)"."""
    if cache is None:
        return "not known (an older report)"
    if cache.path is None:
        return "nowhere: CUDA_CACHE_PATH and HOME are unset"
    facts = []
    if cache.disabled:
        facts.append("disabled by CUDA_CACHE_DISABLE=1")
    facts.append("writable" if cache.writable else "NOT writable")
    if cache.used_bytes:
        facts.append(f"holds {_mib(cache.used_bytes)}")
    elif cache.used_bytes == 0:
        facts.append("empty")
    size = "CUDA_CACHE_MAXSIZE" if cache.maxsize_bytes is not None else "CUDA's default"
    facts.append(f"up to {_mib(cache.maxsize_effective)} ({size})")
    if cache.filesystem:
        facts.append(f"on {cache.filesystem}")
    return f"{cache.path} ({', '.join(facts)})"


def cache_fixes(cache: JitCache | None) -> list[str]:
    """What keeps the compiled kernels from one start to the next, where this cache does not."""
    if cache is None:
        return []
    fixes = []
    if cache.disabled:
        fixes.append("unset CUDA_CACHE_DISABLE")
    if cache.path is None or not cache.writable:
        fixes.append("point CUDA_CACHE_PATH at a writable volume (the image uses /cuda-cache)")
    elif cache.filesystem in ("tmpfs", "overlay"):
        fixes.append(f"put CUDA_CACHE_PATH on a persistent volume (now {cache.lifetime})")
    if cache.maxsize_effective < CUDA_MAX_MAXSIZE:
        fixes.append(f"raise CUDA_CACHE_MAXSIZE to {CUDA_MAX_MAXSIZE} (4 GiB, CUDA's maximum)")
    return fixes


def facts(capabilities: list[str], cache: JitCache | None, timeout_s: float | None) -> dict[str, Any]:
    """The report's `tensorflow.ptx_jit`: what the first start will do and what it was given (timeout_s:
    `run`'s --timeout; None for `check`, which runs no kernel)."""
    return {
        "compute_capabilities": capabilities,
        "tensorflow_says": TF_JIT_WARNING,
        "cache": cache_state(cache),
        "cache_warm": bool(cache and cache.warm),
        "cache_fixes": cache_fixes(cache),
        "timeout_s": timeout_s,
        "first_start_timeout_s": FIRST_START_TIMEOUT_S,
    }


def first_start_note(capabilities: list[str], cache: JitCache | None, timeout_s: float | None) -> str:
    """A line for the up-front warning: the cost, the cache, and whether --timeout leaves room for it."""
    cost = (
        f"the first start JIT-compiles every kernel for compute capability {', '.join(capabilities)} from PTX"
        f" (TensorFlow's own log: 'could take 30 minutes or longer'); JIT cache {cache_state(cache)}"
    )
    if cache is not None and cache.warm:
        return cost + "; it holds kernels from an earlier start, so this start may be short"
    if timeout_s is not None and timeout_s < FIRST_START_TIMEOUT_S:
        cost += (
            f"; --timeout {timeout_s:g} s may end during that compile: give a first start"
            f" --timeout {FIRST_START_TIMEOUT_S:g}"
        )
    return cost


def deadline_during_jit(capabilities: list[str], cache: JitCache | None, timeout_s: float) -> tuple[str, str]:
    """(what to add to a timeout's summary, its hint) when the deadline ended on a first start that
    JIT-compiles: the cut is still 50 (nothing was proven), but it is not evidence of a hang."""
    warm = cache is not None and cache.warm
    said = (
        f"; TensorFlow has only PTX for compute capability {', '.join(capabilities)}, so this start"
        f" JIT-compiles its kernels ('could take 30 minutes or longer'), and the JIT cache"
        f" {cache_state(cache)}" + (" already held kernels" if warm else " was cold")
    )
    fixes = cache_fixes(cache)
    keep = f" ({'; '.join(fixes)})" if fixes else ""
    hint = (
        f"a first start on these GPUs compiles for up to half an hour: run once with --timeout"
        f" {FIRST_START_TIMEOUT_S:g} and keep CUDA's JIT cache{keep}; the next start loads the compiled"
        " kernels. If it times out again with a warm cache, it is a hang:"
    )
    return said, hint
