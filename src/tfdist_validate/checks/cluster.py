"""The cluster layer: which worker this is, and whether TF_CONFIG names enough workers."""

from __future__ import annotations

from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Layer, Outcome, failed, passed, skipped
from tfdist_validate.runner import Check

_TF_CONFIG_HINT = (
    "launch every worker with TF_CONFIG naming the whole cluster (Kubeflow's TFJob sets it; see"
    " deploy/kubernetes/ for an Indexed Job that builds it from the completion index)"
)


def check_tf_config(ctx: Context) -> Outcome:
    wanted = ctx.settings.min_workers
    cluster = ctx.cluster
    if cluster is None or not cluster.is_multi_worker:
        found = "names a one-worker cluster" if cluster else "is not set"
        if wanted > 1:
            return failed(
                ExitCode.TOO_FEW_GPUS, f"--min-workers {wanted}, but TF_CONFIG {found}", _TF_CONFIG_HINT
            )
        return skipped(f"single host: TF_CONFIG {found}, so MirroredStrategy runs on this host only")
    ctx.section("cluster").update(cluster.to_json())
    if cluster.num_workers < wanted:
        return failed(
            ExitCode.TOO_FEW_GPUS,
            f"TF_CONFIG names {cluster.num_workers} workers, fewer than --min-workers {wanted}",
            _TF_CONFIG_HINT,
        )
    peers = ", ".join(f"{name} at {address}" for name, address in cluster.peers)
    return passed(
        f"this is {cluster.task_name} ({cluster.address}) of {cluster.num_workers} workers; peers: {peers}",
        {"task": cluster.task_name, "workers": cluster.num_workers},
    )


CHECKS = (Check("cluster.tf_config", Layer.CLUSTER, check_tf_config),)
