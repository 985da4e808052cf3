"""Why a stage may take minutes on a healthy node, said in its heartbeat so that an operator waits for it
instead of killing it. Knowledge as data; the facts earlier layers found (the GPUs' compute capability, a
multi-worker TF_CONFIG) add what applies to this node."""

from __future__ import annotations

from tfdist_validate.checks.gpu_capabilities import jit_capabilities
from tfdist_validate.context import Context

_USUALLY = {
    "tensorflow.import": "importing TensorFlow and loading its CUDA libraries; slow on a cold disk cache",
    "smoke.allreduce_bandwidth": "timing repeated all-reduces",
}
# ... and on GPUs only (a --cpu-replicas dry run touches none)
_WITH_GPUS = {
    "driver.nvml": "NVML initialises every GPU; without persistence mode the driver loads first",
    "smoke.strategy": "CUDA initialises every GPU and the model is built on each replica",
}
# The stages that run TensorFlow's kernels (and NCCL's first collectives) for the first time.
_FIRST_KERNELS = ("smoke.strategy", "smoke.training")


def why_slow(stage: str, ctx: Context) -> str:
    reasons = []
    if stage in _FIRST_KERNELS:
        jit = jit_capabilities(ctx)
        if jit:
            reasons.append(f"first start on compute capability {', '.join(jit)} JIT-compiles kernels")
        if ctx.cluster is not None and ctx.cluster.is_multi_worker:
            reasons.append("NCCL set-up waits for every worker TF_CONFIG names")
    usual = _USUALLY.get(stage) or ("" if ctx.dry_run else _WITH_GPUS.get(stage, ""))
    if not reasons and usual:
        reasons.append(usual)
    return "; ".join(reasons)
