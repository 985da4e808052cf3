"""Which compute capability each GPU has, and which of them this TensorFlow build reaches only through PTX.

Shared by the TensorFlow layer (23, the driver judgement) and the smoke verdicts (a first start compiles).
"""

from __future__ import annotations

from tfdist_validate.context import Context
from tfdist_validate.host.cuda_compat import coverage
from tfdist_validate.probes.tf_facts import TfFacts


def gpu_capabilities(ctx: Context, facts: TfFacts) -> list[tuple[int, str, tuple[int, int]]]:
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
        cc for _, _, cc in gpu_capabilities(ctx, facts) if coverage(cc, facts.capabilities).status == "ptx"
    ]
    return [f"{major}.{minor}" for major, minor in dict.fromkeys(found)]
