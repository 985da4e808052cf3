"""The device layer: how many replicas MirroredStrategy would get here, against --min-gpus.

Prints the reference's `visible_gpus=N` line, with N = len(tf.config.list_physical_devices("GPU")) exactly as
the reference script computes it (0 on a CPU-only machine, in a dry run too).
"""

from __future__ import annotations

import re

from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.visible import numbering_note, run_gpus
from tfdist_validate.result import Layer, Outcome, failed, passed, warned
from tfdist_validate.runner import Check

_NAME = re.compile(r"(?:device:)?(gpu|cpu):(\d+)$", re.IGNORECASE)
_ONE_REPLICA = "one replica is valid TensorFlow but not distributed training"


def canonical(name: str) -> str:
    """ "/job:localhost/replica:0/task:0/device:GPU:1", "GPU:1", "/gpu:1" -> "/gpu:1"."""
    match = _NAME.search(name.strip())
    return f"/{match.group(1).lower()}:{int(match.group(2))}" if match else name.strip()


def check_count(ctx: Context) -> Outcome:
    facts = ctx.facts.tensorflow
    tf_gpus = list(facts.gpus) if facts else []
    ctx.clear_status()
    print(f"visible_gpus={len(tf_gpus)}", file=ctx.out, flush=True)
    settings = ctx.settings
    if ctx.dry_run:
        available = [f"/cpu:{i}" for i in range(settings.cpu_replicas or 0)]
        what = "logical CPU device"
    else:
        available = [canonical(name) for name in tf_gpus]
        what = "GPU"
    chosen = available
    if settings.devices:
        chosen = [canonical(d) for d in settings.devices]
        unknown = [d for d, c in zip(settings.devices, chosen, strict=True) if c not in available]
        if unknown:
            have = ", ".join(available) or "none"
            return failed(
                ExitCode.TOO_FEW_GPUS,
                f"--devices names {', '.join(unknown)}, which this run does not have"
                f" (available {what}s: {have})",
                "list only devices that exist here (`tfdist-validate check` prints them), or drop --devices",
            )
    host = ctx.section("host")
    host["devices"] = chosen
    replicas = len(chosen)
    listed = ", ".join(chosen) or "none"
    if ctx.cluster is not None and ctx.cluster.is_multi_worker:
        return _count_cluster(ctx, chosen, host)
    host["replicas_planned"] = replicas
    if replicas < settings.min_gpus:
        hint = (
            f"give the dry run at least {settings.min_gpus} replicas (--cpu-replicas {settings.min_gpus})"
            if ctx.dry_run
            else "make more GPUs visible (container --gpus / pod nvidia.com/gpu limit, CUDA_VISIBLE_DEVICES,"
            " --devices), or lower --min-gpus (1 is allowed for single-GPU pods)"
        )
        return failed(
            ExitCode.TOO_FEW_GPUS,
            f"{replicas} usable {what}(s) ({listed}), fewer than --min-gpus {settings.min_gpus}",
            hint,
        )
    listed += _nvml_names(ctx, len(tf_gpus))
    if replicas == 1:
        return warned(
            f"1 replica on {listed}: {_ONE_REPLICA}", "use 2 or more GPUs to prove distributed training"
        )
    return passed(f"{replicas} replicas planned on {listed}")


def _nvml_names(ctx: Context, tf_count: int) -> str:
    """Both numberings where TensorFlow's GPU:k is not NVML's (nvidia-smi's) GPU k, so that a hint naming
    one cannot be read as the other."""
    snapshot = ctx.facts.driver
    if ctx.dry_run or snapshot is None:
        return ""
    order = run_gpus(snapshot.gpus, ctx.env, None)
    if order is None or len(order) != tf_count:
        return ""
    note = numbering_note(order)
    return f" ({note})" if note else ""


def _count_cluster(ctx: Context, chosen: list[str], host: dict[str, object]) -> Outcome:
    """MultiWorkerMirroredStrategy: --min-gpus counts the replicas of the whole cluster."""
    assert ctx.cluster is not None
    workers = ctx.cluster.num_workers
    # On CPUs MultiWorkerMirroredStrategy places exactly one replica per worker (CPU:0), whatever
    # --cpu-replicas asks for; on GPUs it uses every local GPU. Assumes every worker looks like this one,
    # which the smoke test then verifies from the strategy itself.
    local = 1 if ctx.dry_run else len(chosen)
    total = local * workers
    host["replicas_planned"] = total
    host["local_replicas_planned"] = local
    shape = f"{local} local replica(s) x {workers} workers = {total} replicas"
    if total < ctx.settings.min_gpus:
        return failed(
            ExitCode.TOO_FEW_GPUS,
            f"{shape}, fewer than --min-gpus {ctx.settings.min_gpus}",
            "give each worker more GPUs (pod nvidia.com/gpu limit), add workers, or lower --min-gpus",
        )
    asked = ctx.settings.cpu_replicas
    if asked is not None and asked > 1:
        # A warning, not exit 2: the dry run the option asks for still runs (GPU layers skipped, strategy and
        # training for real), only with fewer replicas, and --min-gpus was judged on the real count above.
        return warned(
            f"--cpu-replicas {asked} gives this worker 1 replica, not {asked}: TensorFlow's"
            f" MultiWorkerMirroredStrategy uses one CPU device per worker; {shape}"
            f" (this is {ctx.cluster.task_name})",
            "give every worker --cpu-replicas 1 (the same cluster, without this warning); more replicas need"
            " more workers",
        )
    return passed(f"{shape} planned (MultiWorkerMirroredStrategy, this is {ctx.cluster.task_name})")


CHECKS = (
    Check(
        "devices.count",
        Layer.DEVICES,
        check_count,
        requires=("tensorflow.import", "tensorflow.gpus_visible"),
    ),
)
