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


def choose(setting: str, wsl2: bool, multi_worker: bool) -> tuple[str, str]:
    """(the implementation to build, why): "tensorflow" leaves MirroredStrategy's default in place."""
    if multi_worker:
        # MultiWorkerMirroredStrategy takes no cross_device_ops; its collectives pick their own transport
        why = "MultiWorkerMirroredStrategy chooses its own collectives"
        if setting not in ("auto", "tensorflow"):
            why += f"; --cross-device-ops {setting} applies to MirroredStrategy only and was not used"
        return "tensorflow", why
    if setting != "auto":
        return setting, f"--cross-device-ops {setting}"
    if wsl2:
        return (
            WSL2_CHOICE,
            "auto under WSL2: NCCL's multi-GPU support there has gaps (NVIDIA/nccl#442,"
            " microsoft/WSL#12467), so MirroredStrategy gets HierarchicalCopyAllReduce;"
            " --cross-device-ops tensorflow tests NCCL",
        )
    return "tensorflow", "auto: TensorFlow's own choice (NCCL on physical GPUs)"


def make(tf: Any, implementation: str) -> Any:
    """The cross_device_ops= argument for MirroredStrategy; None leaves TensorFlow's default."""
    name = TF_CLASSES.get(implementation)
    return None if name is None else getattr(tf.distribute, name)()
