"""How each smoke-test stage is judged, from the child's typed stage records (smoke/records.py): one verdict
function per check, and what a stage that never reported means (a hang, a death, an earlier failure).
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.checks import ptx_jit
from tfdist_validate.checks.gpu_capabilities import jit_capabilities
from tfdist_validate.checks.smoke_naming import device_named, first_line, out_of_memory, short_device
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Outcome, failed, passed, skipped, warned
from tfdist_validate.smoke import cross_device, errors
from tfdist_validate.smoke.records import (
    AllreduceRecord,
    BandwidthRecord,
    FitRecord,
    StrategyRecord,
    SyncRecord,
)
from tfdist_validate.smoke.run import SmokeRun, allreduce_mib

NCCL_DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"

_DOING = {
    "strategy": "creating the distribution strategy and building the model in its scope",
    "fit": "model.fit",
    "sync": "comparing the replicas' variables",
    "conv": "the convolution probe (cuDNN on GPUs)",
    "prefetch": "the pass through the distributed dataset",
    "allreduce": "the exact all-reduce",
    "bandwidth": "the timed all-reduce",
}
# A child that dies (segfault, OOM killer) inside a stage fails with that stage's code.
_DIED_CODE = {
    "strategy": ExitCode.COLLECTIVE_FAILED,
    "fit": ExitCode.TRAINING_FAILED,
    "sync": ExitCode.RESULT_MISMATCH,
    "conv": ExitCode.TRAINING_FAILED,
    "prefetch": ExitCode.TRAINING_FAILED,
    "allreduce": ExitCode.COLLECTIVE_FAILED,
    "bandwidth": ExitCode.COLLECTIVE_FAILED,
}
# NCCL's troubleshooting guide (NCCL_DOCS, "Docker" / shared memory) has containers started with
# `--shm-size=1g`: NCCL puts its shared-memory transport's buffers in /dev/shm, and docker's and Kubernetes'
# 64 MB default is too small for several GPUs without peer-to-peer (our diagnose signature nccl-shared-memory
# cites real failures). Below this the run warns; the shipped compose file and manifests give exactly this.
NCCL_DEV_SHM_BYTES = 1 << 30

_HANG_HINT = (
    "if epoch lines were still coming, raise --timeout; a collective that never completes is usually"
    " NCCL: rerun with NCCL_DEBUG=INFO, check `nvidia-smi topo -m` and try NCCL_P2P_DISABLE=1"
    f" (peer-to-peer over a broken PCIe/IOMMU path); {NCCL_DOCS}"
)
_COLLECTIVE_HINT = (
    f"rerun with NCCL_DEBUG=INFO and read the child's log (in the report's smoke.log); {NCCL_DOCS}"
)


def _wrong_sum_hint(run: SmokeRun, replicas: int) -> str:
    ops = (run.results.get("strategy") or {}).get("cross_device_ops") or {}
    if ops.get("class") == "HierarchicalCopyAllReduce" and replicas % 2 == 1:
        return (
            f"{cross_device.ODD_COUNT}: use an even number of devices or --cross-device-ops"
            " reduce-to-one-device (in your job: tf.distribute.ReductionToOneDevice())"
        )
    return "the all-reduce corrupts data: " + _COLLECTIVE_HINT


def _collective_hint(run: SmokeRun, ctx: Context) -> str:
    """Under WSL2 with NCCL in use (--cross-device-ops tensorflow / nccl), the known way out comes first."""
    found = run.results.get("strategy") or {}
    ops = found.get("cross_device_ops") or {}
    # MultiWorkerMirroredStrategy ("workers" in its record) takes no cross_device_ops: nothing to suggest
    nccl = ops.get("requested") in ("tensorflow", "nccl") and "workers" not in found
    runtime = ctx.facts.runtime
    if nccl and runtime is not None and runtime.wsl2 and not ctx.dry_run:
        return (
            "under WSL2 NCCL's multi-GPU support has gaps (NVIDIA/nccl#442, microsoft/WSL#12467): rerun"
            " without --cross-device-ops (auto takes HierarchicalCopyAllReduce there) and build your"
            " strategy as MirroredStrategy(cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()); "
            + _COLLECTIVE_HINT
        )
    return _COLLECTIVE_HINT


def _strategy_name(ctx: Context) -> str:
    multi = ctx.cluster is not None and ctx.cluster.is_multi_worker
    return "MultiWorkerMirroredStrategy" if multi else "MirroredStrategy"


def missing(stage: str, run: SmokeRun, ctx: Context) -> Outcome:
    """No result for `stage`: the child hung, died, or stopped earlier."""
    at = run.results.in_progress()
    error = run.results.error or {}
    evidence = {**run.evidence(), "child_error": error or None}
    if error.get("during") == "import":
        return failed(
            ExitCode.TF_IMPORT_FAILED,
            f"the smoke-test child could not import TensorFlow: {first_line(str(error.get('error')))}",
            "`tfdist-validate check` shows why; reinstall TensorFlow in this environment",
            evidence,
        )
    if stage != at:
        where = _DOING.get(at or "", "an earlier stage")
        return skipped(f"not reached: the smoke test stopped during {where}", evidence)
    if run.timed_out:
        survivors = (
            f"; {len(run.leftover_pids)} process(es) did not die (stuck in the driver?): {run.leftover_pids}"
            if run.leftover_pids
            else "; its whole process group was killed"
        )
        last = f" (last output: {run.output_tail[-1]!r})" if run.output_tail else " (it printed nothing)"
        summary = f"the smoke test did not finish {_DOING[stage]} within --timeout {ctx.settings.timeout:g} s"
        jit = jit_capabilities(ctx)
        if jit:
            # still 50 (nothing was proven), but a first start's compile is not evidence of a hang
            cache = ctx.facts.runtime.jit_cache if ctx.facts.runtime else None
            said, hint = ptx_jit.deadline_during_jit(jit, cache, ctx.settings.timeout)
            evidence["ptx_jit_first_start"] = True
            return failed(
                ExitCode.TIMEOUT, f"{summary}{said}{last}{survivors}", f"{hint} {_HANG_HINT}", evidence
            )
        return failed(ExitCode.TIMEOUT, f"{summary}{last}{survivors}", _HANG_HINT, evidence)
    why = first_line(str(error["error"])) if error else f"the child process ended ({evidence['child_exit']})"
    return failed(
        _DIED_CODE[stage],
        f"the smoke test failed during {_DOING[stage]}: {why}",
        f"read the child's TensorFlow log: {run.log_path}",
        evidence,
    )


def strategy(found: StrategyRecord, run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ok") and (found.get("oom") or errors.looks_like_oom(str(found.get("error", "")))):
        # memory, not the collective: an NCCL hint would send the reader the wrong way
        doing = f"while creating {_strategy_name(ctx)} and building the model in its scope"
        return out_of_memory(found, run, ctx, doing)
    if not found.get("ok"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"{_strategy_name(ctx)} could not be created: {first_line(str(found.get('error')))}",
            "check the devices named by --devices against `tfdist-validate check`; "
            + _collective_hint(run, ctx),
            {**found, **run.evidence()},
        )
    replicas = int(found["replicas"])
    if not found.get("model_strategy_ok"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            "the model was built inside strategy.scope() but model.distribute_strategy is not that strategy",
            "this TensorFlow / Keras pairing does not bind models to the strategy; check their versions",
            found,
        )
    requested = found.get("requested_devices")
    if requested and replicas != len(requested):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"MirroredStrategy was asked for {len(requested)} devices but runs {replicas} replica(s)",
            "check the names given to --devices against `tfdist-validate check`",
            found,
        )
    if "workers" in found:
        expected = found["local_replicas"] * found["workers"]
        if replicas != expected:
            return failed(
                ExitCode.COLLECTIVE_FAILED,
                f"{found['workers']} workers with {found['local_replicas']} local replica(s) each should give"
                f" {expected} replicas, but the strategy has {replicas}",
                "give every worker the same GPUs (same nvidia.com/gpu limit) and the same TF_CONFIG cluster",
                found,
            )
        if replicas < ctx.settings.min_gpus:
            return failed(
                ExitCode.TOO_FEW_GPUS,
                f"{replicas} replicas across {found['workers']} workers, fewer than --min-gpus"
                f" {ctx.settings.min_gpus}",
                "give each worker more GPUs, or lower --min-gpus",
                found,
            )
    devices = ", ".join(short_device(d) for d in found["devices"])
    if "workers" in found:
        devices = f"{devices} on {found['task']}, {found['workers']} workers"
    ops = found["cross_device_ops"]
    # a choice other than TensorFlow's own says why (WSL2's fallback, --cross-device-ops)
    why = f" ({ops['why']})" if ops.get("requested", "tensorflow") != "tensorflow" else ""
    summary = (
        f"{found['strategy']} with {replicas} replica(s) on {devices}, global batch {found['global_batch']};"
        f" all-reduce: {ops['name']}{why}; the model was built in its scope"
    )
    small_shm = _small_dev_shm(found, ctx)
    if small_shm:
        return warned(
            f"{summary}; but {small_shm}",
            "give the container more shared memory: `docker run --shm-size=1g` (compose: shm_size), in"
            " Kubernetes an emptyDir with medium: Memory mounted at /dev/shm (deploy/kubernetes/); "
            + NCCL_DOCS,
            found,
        )
    return passed(summary, found)


def _small_dev_shm(found: StrategyRecord, ctx: Context) -> str | None:
    """What is wrong with /dev/shm for NCCL, or None. Not in a --cpu-replicas dry run (no NCCL there), not
    with one local GPU (NCCL has no peer on the node to share memory with), not where it was not measured."""
    size = found.get("dev_shm_bytes")
    local = int(found.get("local_replicas", found["replicas"]))
    if ctx.dry_run or size is None or local < 2 or size >= NCCL_DEV_SHM_BYTES:
        return None
    return (
        f"/dev/shm is {size / 2**20:.0f} MiB, less than the {NCCL_DEV_SHM_BYTES >> 20} MiB NCCL's"
        " shared-memory transport is given in its documentation: collectives between GPUs without"
        " peer-to-peer can fail"
    )


def training(found: FitRecord, run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ok"):
        error = str(found.get("error"))
        if found.get("oom"):
            # before the collective: a collective aborted by a replica that ran out of memory is memory too
            return failed(
                ExitCode.TRAINING_FAILED,
                f"model.fit raised {first_line(error)} (out of memory{device_named(found, ctx)})",
                "out of GPU memory: look for other processes on the GPUs (`nvidia-smi`) or lower"
                " --per-replica-batch",
                found,
            )
        hint = f"TensorFlow's full message is in the report; the log: {run.log_path}"
        if found.get("collective"):
            # the all-reduce inside a training step failed, not the model: the more fundamental cause
            return failed(
                ExitCode.COLLECTIVE_FAILED,
                f"a cross-replica collective failed during training: {first_line(error)}",
                _collective_hint(run, ctx),
                found,
            )
        return failed(ExitCode.TRAINING_FAILED, f"model.fit raised {first_line(error)}", hint, found)
    epochs = len(found["epochs"])
    if epochs != ctx.settings.epochs:
        return failed(
            ExitCode.TRAINING_FAILED,
            f"model.fit stopped after {epochs} of {ctx.settings.epochs} epochs",
            f"read the child's log: {run.log_path}",
            found,
        )
    step = found.get("step_time_s")
    step_text = f" (steady step {step * 1000:.1f} ms)" if step is not None else ""
    loop = found.get("loop", "model.fit")
    return passed(f"{loop} ran {epochs} epoch(s) of {found['steps_per_epoch']} steps{step_text}", found)


def replicas_in_sync(found: SyncRecord, run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ran"):
        return skipped(str(found.get("reason", "not run")), found)
    checked, replicas = found["variables_checked"], found["replicas"]
    if found["not_mirrored"]:
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"{len(found['not_mirrored'])} model variable(s) are not mirrored across the replicas,"
            f" e.g. {found['not_mirrored'][0]} (created outside strategy.scope())",
            "create the model, optimizer and metrics inside strategy.scope()",
            found,
        )
    if found["mismatched_count"]:
        first = found["mismatched"][0]
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"{found['mismatched_count']} of {checked} mirrored variables differ between the replicas"
            f" (e.g. {first['variable']}, max |difference| {first['max_abs_diff']:g})",
            "the replicas applied different updates: the gradient all-reduce is broken; " + _COLLECTIVE_HINT,
            found,
        )
    if checked == 0:
        return failed(ExitCode.RESULT_MISMATCH, "no mirrored variable was found to compare", "", found)
    return passed(
        f"all {checked} mirrored variables (weights and optimizer state) are bit-identical on {replicas}"
        " replica(s)",
        found,
    )


def allreduce_exact(found: AllreduceRecord, run: SmokeRun, ctx: Context) -> Outcome:
    if found.get("error"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"the cross-replica all-reduce raised {first_line(str(found['error']))}",
            _collective_hint(run, ctx),
            {**found, **run.evidence()},
        )
    if not found.get("ok"):
        wrong = found.get("wrong") or []
        first: dict[str, Any] = dict(wrong[0]) if wrong else {}
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"the cross-replica sum is wrong on {len(wrong) or 1} of {found['replicas']} replica(s): replica"
            f" {first.get('replica')}, element {first.get('index')} is {first.get('got')},"
            f" expected {first.get('want')}",
            _wrong_sum_hint(run, int(found["replicas"])),
            found,
        )
    return passed(
        f"the cross-replica sum of {found['elements']} known {found['dtype']} values is exact, bit for bit,"
        f" on all {found['replicas']} replica(s)",
        found,
    )


def accuracy(_found: FitRecord, run: SmokeRun, ctx: Context) -> Outcome:
    fit = run.results.get("fit") or {}
    final = fit.get("final_val_binary_accuracy")
    floor = ctx.settings.min_val_accuracy
    details = {"final_val_binary_accuracy": final, "min_val_accuracy": floor}
    if final is None:
        return failed(ExitCode.RESULT_MISMATCH, "the final validation accuracy is not a number", "", details)
    if final < floor:
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"final val_binary_accuracy {final:.4f} is below --min-val-accuracy {floor:g}",
            "with the defaults, 2 replicas reach 0.9609 (the reference table); lower accuracy with the same"
            " settings points at wrong gradient aggregation, more epochs help other sizes",
            details,
        )
    return passed(f"final val_binary_accuracy {final:.4f} >= {floor:g}", details)


def bandwidth(found: BandwidthRecord, run: SmokeRun, ctx: Context) -> Outcome:
    # the size the child timed (a CPU dry run's default is smaller than a GPU run's)
    size = found.get("size_bytes")
    mib = size / 2**20 if isinstance(size, int) else allreduce_mib(ctx.settings)
    floor = ctx.settings.min_busbw_gbps
    if not found.get("ok"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"the timed {mib:g} MiB all-reduce raised {first_line(str(found.get('error')))}",
            "a smaller --allreduce-mib tells memory from link problems; " + _collective_hint(run, ctx),
            found,
        )
    replicas = found["replicas"]
    if replicas < 2:
        summary = "one replica: an all-reduce moves no data between devices, so there is no bus bandwidth"
        if floor is not None:
            return warned(summary + f"; --min-busbw-gbps {floor:g} was not applied", "", found)
        return skipped(summary, found)
    strategy = run.results.get("strategy") or {}
    how = found.get("implementation") or strategy.get("cross_device_ops", {}).get("name", "unknown")
    figures = (
        f"{mib:g} MiB all-reduce on {replicas} replicas ({how}): algbw {found['algbw_gbps']:.2f} GB/s,"
        f" busbw {found['busbw_gbps']:.2f} GB/s"
    )
    if found.get("per_call"):  # a report of an older version timed one all-reduce per call
        figures += (
            f", {found['time_s'] * 1000:.3f} ms per all-reduce ({found['calls']} calls of"
            f" {found['per_call']} chained all-reduces)"
        )
    if ctx.dry_run:
        figures += " (CPU dry run: memory copies, not GPU links)"
    if floor is not None and found["busbw_gbps"] < floor:
        return failed(
            ExitCode.PERF_BELOW_FLOOR,
            f"{figures} is below --min-busbw-gbps {floor:g}",
            "`nvidia-smi topo -m`: GPUs that meet over PCIe host bridges (PHB, SYS) instead of NVLink are"
            " slower; NCCL_DEBUG=INFO names the transport NCCL chose",
            found,
        )
    return passed(figures, found)
