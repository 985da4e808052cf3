"""Run the smoke-test child once under the deadline and turn what it left into the report's `smoke` block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfdist_validate.context import Context
from tfdist_validate.settings import Settings
from tfdist_validate.signals import signals_deferred
from tfdist_validate.smoke import cross_device, records, results as child_results
from tfdist_validate.smoke.process import ChildProcess, describe_exit, read_tail
from tfdist_validate.smoke.spec import ChildSpec
from tfdist_validate.tfsession import SmokeChild

LOG_TAIL_LINES = 40
DRY_RUN_ALLREDUCE_MIB = 8.0
OUTPUT_TAIL_LINES = 40
_LINE_CHARS = 500


@dataclass(frozen=True)
class SmokeRun:
    results: child_results.ChildResults
    timed_out: bool
    returncode: int | None
    log_path: Path
    log_tail: list[str]
    output_tail: list[str]
    leftover_pids: list[int]

    def evidence(self) -> dict[str, Any]:
        """What a failing check shows: what the child printed so far and the end of its TensorFlow log."""
        return {
            "output_tail": self.output_tail,
            "log_path": str(self.log_path),
            "log_tail": self.log_tail,
            "child_exit": describe_exit(self.returncode),
            "leftover_pids": self.leftover_pids,
        }


def tail_lines(path: Path, count: int) -> list[str]:
    lines = read_tail(path, 64 * 1024).splitlines()[-count:]
    return [line[:_LINE_CHARS] for line in lines]


def allreduce_mib(settings: Settings) -> float:
    """The timed all-reduce's size. A CPU dry run's default is DRY_RUN_ALLREDUCE_MIB: there the figure is
    memory copies anyway, and 64 MiB per replica would cost a quarter of a gigabyte of RAM for it."""
    if settings.cpu_replicas is not None and settings.sources.get("allreduce_mib", "default") == "default":
        return min(settings.allreduce_mib, DRY_RUN_ALLREDUCE_MIB)
    return settings.allreduce_mib


def _replicas(ctx: Context) -> int | None:
    """How many replicas MirroredStrategy will have: --cpu-replicas, --devices, else the GPUs TensorFlow
    listed; None where unknown."""
    settings = ctx.settings
    if settings.cpu_replicas is not None:
        return settings.cpu_replicas
    if settings.devices is not None:
        return len(settings.devices)
    facts = ctx.facts.tensorflow
    return len(facts.gpus) if facts is not None and facts.gpus else None


def run_smoke(ctx: Context, stage_names: Mapping[str, str] | None = None) -> SmokeRun:
    """stage_names: the child's stages ("fit") by the name the heartbeat shows for each ("smoke.training").

    The run's TensorFlow session starts the child (in `run`, the process that already answered the
    TensorFlow layer); this function relays it until the deadline, stops it and records what it left."""
    settings = ctx.settings
    multi_worker = ctx.cluster is not None and ctx.cluster.is_multi_worker
    wsl2 = ctx.facts.runtime is not None and ctx.facts.runtime.wsl2
    implementation, why = cross_device.choose(settings.cross_device_ops, wsl2, multi_worker, _replicas(ctx))
    requested = ChildSpec(
        results_path="",  # the session decides where its child writes
        devices=settings.devices,
        cpu_replicas=settings.cpu_replicas,
        epochs=settings.epochs,
        per_replica_batch=settings.per_replica_batch,
        allreduce_mib=allreduce_mib(settings),
        budget_s=ctx.deadline.remaining(),
        multi_worker=multi_worker,
        cross_device_ops=implementation,
        cross_device_ops_why=why,
    )
    section = ctx.section("smoke")
    section.update(dry_run=ctx.dry_run, requested_devices=requested.strategy_devices())
    # a stop signal that lands while it starts is raised after it: the session's close() then stops it
    started = ctx.tf.start_smoke(requested)
    section["log"] = {"path": str(started.log_path), "tail": []}
    section["child"] = {"pid": started.process.pid}  # named at once: a report cut short says who ran
    results_path = started.results_path
    interrupted = False
    try:
        ctx.progress.follow(lambda: _stage_now(results_path, stage_names or {}))
        started.process.relay_until(ctx.deadline.at)
    except BaseException as stop:  # Terminated (SIGTERM / SIGINT / SIGHUP) from app.py: clean up, go on
        interrupted = not isinstance(stop, Exception)
        raise
    finally:
        run = _stop_and_record(started, section, interrupted)
    return run


def _stop_and_record(started: SmokeChild, section: dict[str, Any], interrupted: bool) -> SmokeRun:
    child = started.process
    with signals_deferred():
        child.stop()
        run = SmokeRun(
            results=child_results.read(started.results_path),
            timed_out=child.timed_out,
            returncode=child.returncode,
            log_path=started.log_path,
            log_tail=tail_lines(started.log_path, LOG_TAIL_LINES),
            output_tail=list(child.relay.kept)[-OUTPUT_TAIL_LINES:],
            leftover_pids=child.leftover_pids,
        )
        fill_section(section, run, child, started.spec, interrupted)
    return run


def _stage_now(results_path: Path, stage_names: Mapping[str, str]) -> str | None:
    """The stage the child works on now, from the results it wrote so far (one per finished stage)."""
    return stage_names.get(child_results.read(results_path).in_progress() or "")


def fill_section(
    section: dict[str, Any], run: SmokeRun, child: ChildProcess, spec: ChildSpec, interrupted: bool
) -> None:
    # stages whose facts the report lists key by key, when the stage succeeded; our own checks' whole records
    for stage, keys in records.REPORTED_KEYS.items():
        found = run.results.get(stage) or {}
        if found.get("ok"):
            section.update({key: found[key] for key in keys})
    for stage in records.REPORTED_WHOLE:
        whole = run.results.get(stage)
        if whole is not None:
            section[stage] = whole
    section["log"] = {"path": str(run.log_path), "tail": run.log_tail}
    section["output_tail"] = run.output_tail
    section["child"] = {
        "pid": child.pid,
        "exit_status": run.returncode,
        "exit": describe_exit(run.returncode),
        "timed_out": run.timed_out,
        "interrupted": interrupted,
        "duration_s": round(child.duration_s, 3),
        "budget_s": round(spec.budget_s, 3),
        "stopped_during": run.results.in_progress(),
        "leftover_pids": run.leftover_pids,
        "results_path": spec.results_path,
        "error": run.results.error,
    }
