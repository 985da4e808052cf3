"""Environment variables that change how the run's collectives (NCCL's all-reduce under MirroredStrategy /
MultiWorkerMirroredStrategy) or TensorFlow's GPU memory behave: listed with what each does, as
information. The one table of them; the report (runtime layer) and the bug bundle both read it.

Sources: NCCL's environment variables (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html),
the CUDA Programming Guide's "CUDA Environment Variables", TensorFlow's GPU guide (TF_FORCE_GPU_ALLOW_GROWTH
overrides what the program sets with tf.config.experimental.set_memory_growth).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping


def _nonzero(value: str) -> bool:  # NCCL and CUDA read these as integers: any non-zero value is "on"
    try:
        return int(value.strip()) != 0
    except ValueError:
        return False


# name -> (when it changes the run, what it does then)
EFFECTS: dict[str, tuple[Callable[[str], bool], str]] = {
    "NCCL_P2P_DISABLE": (
        _nonzero,
        "NCCL does not use peer-to-peer (NVLink or PCIe) between GPUs: collectives go through host memory,"
        " at a fraction of the bandwidth",
    ),
    "NCCL_SHM_DISABLE": (
        _nonzero,
        "NCCL does not use shared memory between processes: where peer-to-peer is not possible, traffic"
        " between GPUs of this host takes the network",
    ),
    "NCCL_IB_DISABLE": (
        _nonzero,
        "NCCL does not use InfiniBand / RoCE: traffic between workers falls back to TCP sockets",
    ),
    "CUDA_LAUNCH_BLOCKING": (
        _nonzero,
        "every CUDA kernel launch waits for the kernel to finish (a debugging setting): training and"
        " collectives run much slower",
    ),
    "NCCL_DEBUG": (
        lambda value: value.strip().upper() in ("INFO", "TRACE"),
        "NCCL logs every communicator's setup (TRACE: every call), left on from debugging: the log grows"
        " fast, and TRACE slows collectives",
    ),
    "TF_FORCE_GPU_ALLOW_GROWTH": (
        lambda value: value.strip().lower() == "false",
        "TensorFlow maps nearly all of each GPU's memory at start, whatever the program asks: NCCL's buffers"
        " and other processes get what is left",
    ),
}
NAMES = tuple(EFFECTS)


def effects(env: Mapping[str, str]) -> dict[str, str]:
    """ "NAME=value" -> what it does to the run, for each variable set to a value that changes it."""
    return {
        f"{name}={env[name]}": effect
        for name, (changes, effect) in EFFECTS.items()
        if name in env and changes(env[name])
    }
