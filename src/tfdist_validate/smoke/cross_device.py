"""Which all-reduce MirroredStrategy is given (`--cross-device-ops`), and why.

By default TensorFlow chooses: on physical GPUs MirroredStrategy all-reduces with CollectiveAllReduce over
NCCL (tensorflow/python/distribute/mirrored_strategy.py, `_make_collective_ops_with_fallbacks`). Under WSL2
that is the path with a history of gaps: NCCL did not support WSL2 at all before 2.10
(https://github.com/NVIDIA/nccl-tests/issues/69, https://github.com/NVIDIA/nccl/issues/442,
https://github.com/NVIDIA/nccl/issues/511), and multi-GPU NCCL under WSL2 still fails in current stacks
("unhandled cuda error", NCCL's /dev/shm segments: https://github.com/microsoft/WSL/issues/12467,
https://github.com/vllm-project/vllm/issues/4411). HierarchicalCopyAllReduce needs no NCCL: it sums with
device-to-device copies and ordinary ops, and is the documented way out where NCCL is missing
(https://github.com/tensorflow/tensorflow/issues/44281). So "auto" takes it under WSL2, and the report says
so; `--cross-device-ops tensorflow` (or `nccl`) tests NCCL there anyway.

But HierarchicalCopyAllReduce is built for DGX-1's two groups of GPUs: it splits the devices into two groups
of n // 2 (tensorflow/python/distribute/cross_device_utils.py, `aggregate_gradients_using_hierarchical_copy`),
so with an odd count one replica's value is left out of the sum, silently (measured with TF 2.21 on logical
CPU devices: 3 replicas holding 1, 2, 3 all-reduce to 3, not 6; 5 replicas to 10, not 15). So "auto" under
WSL2 takes it only for an even count and ReductionToOneDevice (no NCCL either, right for any count) otherwise,
one replica included (NCCL failed on WSL2 even with one GPU: NVIDIA/nccl#442).

The choice is made by the parent from the host facts (it knows WSL2 from --root); the child only maps the
name to TensorFlow's class (`make`).
"""

from __future__ import annotations

from typing import Any

# --cross-device-ops value -> the tf.distribute class the child builds; "tensorflow": MirroredStrategy's own
TF_CLASSES = {
    "hierarchical-copy": "HierarchicalCopyAllReduce",
    "reduce-to-one-device": "ReductionToOneDevice",
    "nccl": "NcclAllReduce",
}
WSL2_CHOICE = "hierarchical-copy"


ODD_COUNT = (
    "TensorFlow's HierarchicalCopyAllReduce leaves one replica out of the sum when their count is odd"
    " (cross_device_utils.aggregate_gradients_using_hierarchical_copy splits them in two groups of n // 2)"
)


def choose(setting: str, wsl2: bool, multi_worker: bool, replicas: int | None) -> tuple[str, str]:
    """(the implementation to build, why): "tensorflow" leaves MirroredStrategy's default in place.
    `replicas`: how many the strategy will have, None where not known before it starts."""
    if multi_worker:
        # MultiWorkerMirroredStrategy takes no cross_device_ops; its collectives pick their own transport
        why = "MultiWorkerMirroredStrategy chooses its own collectives"
        if setting not in ("auto", "tensorflow"):
            why += f"; --cross-device-ops {setting} applies to MirroredStrategy only and was not used"
        return "tensorflow", why
    odd = replicas is None or replicas % 2 == 1
    if setting != "auto":
        why = f"--cross-device-ops {setting}"
        if setting == "hierarchical-copy" and odd:
            why += f"; beware: {ODD_COUNT}"
        return setting, why
    if wsl2:
        gaps = (
            "auto under WSL2: NCCL's multi-GPU support there has gaps (NVIDIA/nccl#442, microsoft/WSL#12467)"
        )
        if odd:
            reason = "one device" if replicas == 1 else ODD_COUNT
            count = "an unknown number of" if replicas is None else f"{replicas}"
            return (
                "reduce-to-one-device",
                f"{gaps}, and with {count} replica(s) MirroredStrategy gets ReductionToOneDevice"
                f" ({reason}); --cross-device-ops tensorflow tests NCCL",
            )
        return (
            WSL2_CHOICE,
            f"{gaps}, so MirroredStrategy gets HierarchicalCopyAllReduce;"
            " --cross-device-ops tensorflow tests NCCL",
        )
    return "tensorflow", "auto: TensorFlow's own choice (NCCL on physical GPUs)"


def make(tf: Any, implementation: str) -> Any:
    """The cross_device_ops= argument for MirroredStrategy; None leaves TensorFlow's default."""
    name = TF_CLASSES.get(implementation)
    return None if name is None else getattr(tf.distribute, name)()
