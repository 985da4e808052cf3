"""The smoke-test child's devices, set before TensorFlow's runtime starts: which GPUs are visible (--devices),
memory growth on each, the logical CPU devices of a dry run, and the /dev/shm size NCCL will have."""

from __future__ import annotations

import os
import sys
from typing import Any

from tfdist_validate.smoke.spec import ChildSpec


def dev_shm_bytes(path: str = "/dev/shm") -> int | None:
    """The size of the shared-memory filesystem NCCL's SHM transport allocates its segments in (NCCL creates
    them under /dev/shm), or None where there is none (macOS, a sandbox without it). Its total size, not
    what is free: the verdict compares it with what a container should be given."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_frsize * stat.f_blocks


def _gpu_indices(devices: tuple[str, ...]) -> list[int]:
    """The physical GPU indices --devices names ("/gpu:1", "GPU:1", "/job:.../device:GPU:1"), in order."""
    return sorted({int(name.rsplit(":", 1)[1]) for name in devices if "gpu" in name.lower()})


def configure_gpus(tf: Any, spec: ChildSpec) -> tuple[list[Any], list[str] | None]:
    """What a well-behaved job does before TensorFlow's runtime starts: only the GPUs the run uses are
    visible, and each grows its memory as needed. Returns the GPUs made visible and the strategy's
    devices= list.

    Why before any op: the runtime starts at the first op (or list_logical_devices) and then creates a
    context and maps nearly all memory on every visible GPU: the busy GPUs that --devices left out too,
    and a GPU in Exclusive_Process mode outside the list fails context creation. Both calls raise
    RuntimeError once the runtime has started (TensorFlow's API docs, tf.config.set_visible_devices and
    tf.config.experimental.set_memory_growth); list_physical_devices, which `serve`'s "facts" answer
    uses, does not start it. Without memory growth TensorFlow's allocator takes almost all of each GPU
    and NCCL's own allocations then fail. TF_FORCE_GPU_ALLOW_GROWTH, where set, overrides
    set_memory_growth inside TensorFlow's GPU allocator (host/collective_env.py reports it when "false").

    Restricting renumbers: TensorFlow names the visible GPUs /gpu:0, /gpu:1, ... in physical order, so
    "--devices /gpu:2,/gpu:3" becomes MirroredStrategy(["/gpu:0", "/gpu:1"]) on physical GPUs 2 and 3
    (the record's visible_gpus names them).

    What cannot run here: on a machine without GPUs (and in every --cpu-replicas dry run, which hides
    them) the list of GPUs is empty, so set_visible_devices runs with [] and set_memory_growth never
    runs; the selection, the order of the calls and the renaming are proven with a fake tf.config
    (tests/test_smoke_child_checks.py), and on a GPU host by `run --devices` on a subset.
    """
    gpus = tf.config.list_physical_devices("GPU")
    requested = spec.strategy_devices()
    if spec.cpu_replicas is not None:
        # A dry run must not touch the GPUs: they may be what is broken, and it must not hold their memory.
        chosen: list[Any] = []
    elif spec.devices is None:
        chosen = list(gpus)
    else:
        wanted = _gpu_indices(spec.devices)
        missing = [i for i in wanted if i >= len(gpus)]
        if missing:
            raise ValueError(
                f"--devices names GPU {', '.join(map(str, missing))} but TensorFlow sees {len(gpus)} GPU(s)"
            )
        chosen = [gpus[i] for i in wanted]
        renamed = {i: f"/gpu:{n}" for n, i in enumerate(wanted)}
        requested = [
            renamed[int(name.rsplit(":", 1)[1])] if "gpu" in name.lower() else name for name in spec.devices
        ]
    tf.config.set_visible_devices(chosen, "GPU")
    for gpu in chosen:
        tf.config.experimental.set_memory_growth(gpu, True)
    # MultiWorkerMirroredStrategy takes no devices= list: it uses every local GPU TensorFlow can see.
    return chosen, None if spec.multi_worker else requested


def setup_devices(tf: Any, spec: ChildSpec) -> tuple[list[Any], list[str] | None]:
    visible = configure_gpus(tf, spec)
    if spec.cpu_replicas is None:
        return visible
    # MultiWorkerMirroredStrategy would use CPU:0 alone whatever the split (devices.count warns about it)
    count = 1 if spec.multi_worker else spec.cpu_replicas
    # `diagnose` reads this line: TensorFlow's complaints about a missing GPU or driver are expected here.
    print(
        f"tfdist-validate smoke test: CPU dry run on {count} logical CPU device(s); GPUs hidden",
        file=sys.stderr,
        flush=True,
    )
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    )
    return visible
