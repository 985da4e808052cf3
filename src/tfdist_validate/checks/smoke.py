"""The smoke-test checks: one child run per validation (smoke/run.py), judged by six checks.

`checks()` is a factory rather than a CHECKS tuple: the checks of one pipeline share one child run, and a
fresh pipeline must start a fresh one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tfdist_validate.cluster import peers
from tfdist_validate.context import Context
from tfdist_validate.diagnose import Diagnosis, diagnose_file
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Layer, Outcome, Status, failed, passed, skipped, warned
from tfdist_validate.runner import Check
from tfdist_validate.smoke.run import SmokeRun, allreduce_mib, run_smoke

NCCL_DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"

_DOING = {
    "strategy": "creating the distribution strategy and building the model in its scope",
    "fit": "model.fit",
    "sync": "comparing the replicas' variables",
    "allreduce": "the exact all-reduce",
    "bandwidth": "the timed all-reduce",
}
# The check that judges each of the child's stages: while the child runs (inside smoke.strategy, the first
# check), the heartbeat names the stage by its check, so `smoke.training` is what is slow, not the strategy.
CHECK_OF_STAGE = {
    "strategy": "smoke.strategy",
    "fit": "smoke.training",
    "sync": "smoke.replicas_in_sync",
    "allreduce": "smoke.allreduce_exact",
    "bandwidth": "smoke.allreduce_bandwidth",
}
# A child that dies (segfault, OOM killer) inside a stage fails with that stage's code.
_DIED_CODE = {
    "strategy": ExitCode.COLLECTIVE_FAILED,
    "fit": ExitCode.TRAINING_FAILED,
    "sync": ExitCode.RESULT_MISMATCH,
    "allreduce": ExitCode.COLLECTIVE_FAILED,
    "bandwidth": ExitCode.COLLECTIVE_FAILED,
}
# failures a missing or dead peer explains
_PEER_CODES = (ExitCode.TIMEOUT, ExitCode.COLLECTIVE_FAILED, ExitCode.TRAINING_FAILED)
_HANG_HINT = (
    "if epoch lines were still coming, raise --timeout; a collective that never completes is usually"
    " NCCL: rerun with NCCL_DEBUG=INFO, check `nvidia-smi topo -m` and try NCCL_P2P_DISABLE=1"
    f" (peer-to-peer over a broken PCIe/IOMMU path); {NCCL_DOCS}"
)
_COLLECTIVE_HINT = (
    f"rerun with NCCL_DEBUG=INFO and read the child's log (in the report's smoke.log); {NCCL_DOCS}"
)


def _first_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()] or [""]
    line = lines[0]
    if line.endswith("in user code:"):  # a tf.function traceback: TensorFlow's message is its last line
        line = lines[-1]
    elif line.endswith("Graph execution error:"):
        # "<Type>Error: Graph execution error:", the node's Python stack, then TensorFlow's message
        message = [ln for ln in lines[1:] if not ln.startswith(("File ", "Detected at node", "[["))]
        if message:
            line = f"{line.split(':', 1)[0]}: {' '.join(message[:2])}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _strategy_name(ctx: Context) -> str:
    multi = ctx.cluster is not None and ctx.cluster.is_multi_worker
    return "MultiWorkerMirroredStrategy" if multi else "MirroredStrategy"


def _short_device(name: str) -> str:
    return name.rsplit("device:", 1)[-1]


class _SmokeTest:
    """The child runs once, in the first check that needs it; the others judge its results."""

    def __init__(self) -> None:
        self._run: SmokeRun | None = None
        self._peers: list[peers.PeerState] | None = None
        self._diagnosis: Diagnosis | None = None

    def run(self, ctx: Context) -> SmokeRun:
        if self._run is None:
            self._run = run_smoke(ctx, CHECK_OF_STAGE)
        return self._run

    def judge(
        self, stage: str, verdict: Callable[[dict[str, Any], SmokeRun, Context], Outcome]
    ) -> Callable[[Context], Outcome]:
        def check(ctx: Context) -> Outcome:
            run = self.run(ctx)
            found = run.results.get(stage)
            outcome = verdict(found, run, ctx) if found is not None else _missing(stage, run, ctx)
            return self._name_unreachable_peers(self._explain_from_log(outcome, run), ctx)

        return check

    def _explain_from_log(self, outcome: Outcome, run: SmokeRun) -> Outcome:
        """A failed smoke check: read the child's TensorFlow log with `diagnose`'s signatures."""
        if outcome.status is not Status.FAIL:
            return outcome
        if self._diagnosis is None:
            self._diagnosis = diagnose_file(run.log_path)
        causes = self._diagnosis.failures
        if not causes:
            return outcome
        first = causes[0].signature
        return replace(
            outcome,
            summary=f"{outcome.summary} (the log shows: {first.title})",
            hint=f"{first.fix.strip()} {outcome.hint}".strip(),
            details={**outcome.details, "diagnosis": [c.to_json() for c in causes[:3]]},
        )

    def _name_unreachable_peers(self, outcome: Outcome, ctx: Context) -> Outcome:
        """A multi-worker collective that failed or hung: say which peer could not be reached."""
        cluster = ctx.cluster
        if cluster is None or not cluster.is_multi_worker or outcome.code not in _PEER_CODES:
            return outcome
        if self._peers is None:
            self._peers = peers.probe_peers(cluster)
        details = {**outcome.details, "peers": [p.to_json() for p in self._peers]}
        down = peers.unreachable_text(self._peers)
        if not down:
            return replace(outcome, details=details)
        return replace(
            outcome,
            summary=f"{outcome.summary}; unreachable from {cluster.task_name}: {down}",
            hint=(
                "start every worker of the cluster together and check that each one's port is reachable"
                " from the others (headless Service, NetworkPolicy, firewall); TF_CONFIG must name the same"
                " cluster on every worker"
            ),
            details=details,
        )


def _missing(stage: str, run: SmokeRun, ctx: Context) -> Outcome:
    """No result for `stage`: the child hung, died, or stopped earlier."""
    at = run.results.in_progress()
    error = run.results.error or {}
    evidence = {**run.evidence(), "child_error": error or None}
    if error.get("during") == "import":
        return failed(
            ExitCode.TF_IMPORT_FAILED,
            f"the smoke-test child could not import TensorFlow: {_first_line(str(error.get('error')))}",
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
        return failed(
            ExitCode.TIMEOUT,
            f"the smoke test did not finish {_DOING[stage]} within --timeout {ctx.settings.timeout:g} s"
            f"{last}{survivors}",
            _HANG_HINT,
            evidence,
        )
    why = _first_line(str(error["error"])) if error else f"the child process ended ({evidence['child_exit']})"
    return failed(
        _DIED_CODE[stage],
        f"the smoke test failed during {_DOING[stage]}: {why}",
        f"read the child's TensorFlow log: {run.log_path}",
        evidence,
    )


def _strategy(found: dict[str, Any], run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ok"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"{_strategy_name(ctx)} could not be created: {_first_line(str(found.get('error')))}",
            "check the devices named by --devices against `tfdist-validate check`; " + _COLLECTIVE_HINT,
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
    devices = ", ".join(_short_device(d) for d in found["devices"])
    if "workers" in found:
        devices = f"{devices} on {found['task']}, {found['workers']} workers"
    return passed(
        f"{found['strategy']} with {replicas} replica(s) on {devices}, global batch {found['global_batch']};"
        f" all-reduce: {found['cross_device_ops']['name']}; the model was built in its scope",
        found,
    )


def _training(found: dict[str, Any], run: SmokeRun, ctx: Context) -> Outcome:
    if not found.get("ok"):
        error = str(found.get("error"))
        hint = (
            "out of GPU memory: look for other processes on the GPUs (`nvidia-smi`) or lower"
            " --per-replica-batch"
            if found.get("oom")
            else f"TensorFlow's full message is in the report; the log: {run.log_path}"
        )
        if found.get("collective"):
            # the all-reduce inside a training step failed, not the model: the more fundamental cause
            return failed(
                ExitCode.COLLECTIVE_FAILED,
                f"a cross-replica collective failed during training: {_first_line(error)}",
                _COLLECTIVE_HINT,
                found,
            )
        return failed(ExitCode.TRAINING_FAILED, f"model.fit raised {_first_line(error)}", hint, found)
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


def _replicas_in_sync(found: dict[str, Any], run: SmokeRun, ctx: Context) -> Outcome:
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


def _allreduce_exact(found: dict[str, Any], run: SmokeRun, ctx: Context) -> Outcome:
    if found.get("error"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"the cross-replica all-reduce raised {_first_line(str(found['error']))}",
            _COLLECTIVE_HINT,
            {**found, **run.evidence()},
        )
    if not found.get("ok"):
        wrong = found.get("wrong") or [{}]
        first = wrong[0]
        return failed(
            ExitCode.RESULT_MISMATCH,
            f"the cross-replica sum is wrong on {len(wrong)} of {found['replicas']} replica(s): replica"
            f" {first.get('replica')}, element {first.get('index')} is {first.get('got')},"
            f" expected {first.get('want')}",
            "the all-reduce corrupts data: " + _COLLECTIVE_HINT,
            found,
        )
    return passed(
        f"the cross-replica sum of {found['elements']} known {found['dtype']} values is exact, bit for bit,"
        f" on all {found['replicas']} replica(s)",
        found,
    )


def _accuracy(_found: dict[str, Any], run: SmokeRun, ctx: Context) -> Outcome:
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


def _bandwidth(found: dict[str, Any], run: SmokeRun, ctx: Context) -> Outcome:
    # the size the child timed (a CPU dry run's default is smaller than a GPU run's)
    size = found.get("size_bytes")
    mib = size / 2**20 if isinstance(size, int) else allreduce_mib(ctx.settings)
    floor = ctx.settings.min_busbw_gbps
    if not found.get("ok"):
        return failed(
            ExitCode.COLLECTIVE_FAILED,
            f"the timed {mib:g} MiB all-reduce raised {_first_line(str(found.get('error')))}",
            "a smaller --allreduce-mib tells memory from link problems; " + _COLLECTIVE_HINT,
            found,
        )
    replicas = found["replicas"]
    if replicas < 2:
        summary = "one replica: an all-reduce moves no data between devices, so there is no bus bandwidth"
        if floor is not None:
            return warned(summary + f"; --min-busbw-gbps {floor:g} was not applied", "", found)
        return skipped(summary, found)
    strategy = run.results.get("strategy") or {}
    how = strategy.get("cross_device_ops", {}).get("name", "unknown")
    figures = (
        f"{mib:g} MiB all-reduce on {replicas} replicas ({how}): algbw {found['algbw_gbps']:.2f} GB/s,"
        f" busbw {found['busbw_gbps']:.2f} GB/s"
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


def checks(requires: tuple[str, ...] = ()) -> list[Check]:
    """The smoke checks; `requires`: the host checks that must pass first (devices.count)."""
    smoke = _SmokeTest()
    return [
        Check(CHECK_OF_STAGE["strategy"], Layer.STRATEGY, smoke.judge("strategy", _strategy), requires),
        Check(CHECK_OF_STAGE["fit"], Layer.TRAINING, smoke.judge("fit", _training), ("smoke.strategy",)),
        Check(
            CHECK_OF_STAGE["sync"],
            Layer.RESULTS,
            smoke.judge("sync", _replicas_in_sync),
            ("smoke.training",),
        ),
        Check(
            CHECK_OF_STAGE["allreduce"],
            Layer.RESULTS,
            smoke.judge("allreduce", _allreduce_exact),
            ("smoke.strategy",),
        ),
        Check("smoke.accuracy", Layer.RESULTS, smoke.judge("fit", _accuracy), ("smoke.training",)),
        Check(
            CHECK_OF_STAGE["bandwidth"],
            Layer.PERFORMANCE,
            smoke.judge("bandwidth", _bandwidth),
            ("smoke.allreduce_exact",),
        ),
    ]
