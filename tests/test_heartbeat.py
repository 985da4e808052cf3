"""The heartbeat of a long stage, beat by beat on a clock the test moves: what a terminal and a log show."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import hosts
from tfdist_validate import pipeline
from tfdist_validate.checks.slow import why_slow
from tfdist_validate.context import Context, Deadline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.progress import Progress
from tfdist_validate.report.heartbeat import Heartbeat, HeartbeatTiming, show_duration
from tfdist_validate.report.human import HumanReport
from tfdist_validate.result import CheckResult, Layer, passed
from tfdist_validate.runner import run_checks
from tfdist_validate.settings import Settings
from tfdist_validate.verdict import Verdict


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _heartbeat(tty: bool, why: str = "") -> tuple[Heartbeat, Progress, HumanReport, io.StringIO, Clock]:
    clock = Clock()
    stream = io.StringIO()
    human = HumanReport(stream, colour=False, tty=tty)
    progress = Progress(clock)
    beat = Heartbeat(progress, human, 600.0, lambda _stage: why, HeartbeatTiming(), clock)
    return beat, progress, human, stream, clock


def _at(beat: Heartbeat, clock: Clock, *times: float) -> list[str | None]:
    written = []
    for t in times:
        clock.now = t
        written.append(beat.beat())
    return written


def test_on_a_terminal_one_line_appears_after_a_few_seconds_and_updates_in_place() -> None:
    beat, progress, human, stream, clock = _heartbeat(tty=True, why="a cold import")
    progress.begin("tensorflow.import")
    assert _at(beat, clock, 1.0, 4.9, 5.0, 5.5, 6.0, 130.0) == [
        None,
        None,
        "tensorflow.import: still running after 5s (deadline 10m; a cold import)",
        None,
        "tensorflow.import: still running after 6s (deadline 10m; a cold import)",
        "tensorflow.import: still running after 2m10s (deadline 10m; a cold import)",
    ]
    progress.end()
    human.check(
        CheckResult.from_outcome("tensorflow.import", Layer.TENSORFLOW, passed("TensorFlow 2.21.0"), 130)
    )
    erase = "\r\033[K"
    assert stream.getvalue() == (
        f"{erase}tensorflow.import: still running after 5s (deadline 10m; a cold import)"
        f"{erase}tensorflow.import: still running after 6s (deadline 10m; a cold import)"
        f"{erase}tensorflow.import: still running after 2m10s (deadline 10m; a cold import)"
        f"{erase}  PASS  tensorflow.import            TensorFlow 2.21.0\n"
    )  # the check's own line starts on a cleared line


def test_in_a_log_a_line_every_30_seconds_and_none_for_a_short_stage() -> None:
    beat, progress, _human, stream, clock = _heartbeat(tty=False)
    progress.begin("driver.nvml")
    assert _at(beat, clock, 10.0, 29.0) == [None, None]
    progress.end()
    progress.begin("smoke.strategy")  # at 29 s
    assert _at(beat, clock, 35.0, 59.0, 60.0, 75.0, 90.0) == [
        None,
        "smoke.strategy: still running after 30s (deadline 10m)",
        None,
        None,
        "smoke.strategy: still running after 1m01s (deadline 10m)",
    ]
    assert stream.getvalue() == (
        "smoke.strategy: still running after 30s (deadline 10m)\n"
        "smoke.strategy: still running after 1m01s (deadline 10m)\n"
    )


def test_a_finer_stage_is_named_and_timed_from_its_own_start() -> None:
    beat, progress, _human, _stream, clock = _heartbeat(tty=True)
    progress.begin("smoke.strategy")
    child_stage: list[str | None] = [None]
    progress.follow(lambda: child_stage[0])
    assert _at(beat, clock, 6.0) == ["smoke.strategy: still running after 6s (deadline 10m)"]
    child_stage[0] = "smoke.training"  # the child finished the strategy stage at 7 s
    assert _at(beat, clock, 7.0, 11.9, 137.0) == [
        None,
        None,
        "smoke.training: still running after 2m10s (deadline 10m)",
    ]


def test_nothing_is_written_after_the_verdict() -> None:
    beat, progress, human, stream, clock = _heartbeat(tty=False)
    progress.begin("smoke.training")  # the watchdog's last moment: the stage never ended
    human.verdict(Verdict(ExitCode.TIMEOUT, "the whole run exceeded --timeout", "", None), None)
    before = stream.getvalue()
    assert _at(beat, clock, 300.0) == [None]
    assert stream.getvalue() == before


def test_the_thread_stops_and_clears_its_line() -> None:
    beat, progress, _human, stream, _clock = _heartbeat(tty=True)
    progress.begin("smoke.training")
    with beat:
        pass
    assert stream.getvalue() == ""  # nothing was due; stopping wrote nothing either


def test_show_duration() -> None:
    assert [show_duration(s) for s in (0, 5.9, 60, 130, 600, 3725)] == [
        "0s",
        "5s",
        "1m",
        "2m10s",
        "10m",
        "1h02m",
    ]


def _host_context(tmp_path: Path, probe_set: hosts.ProbeSet, **settings: Any) -> Context:
    """The context after the host layers ran on a scenario: the facts a heartbeat's note reads."""
    host = hosts.docker_with_toolkit(tmp_path / "root")
    settings_ = Settings(root=str(host.root), **settings)
    ctx = Context(settings_, "run", host.env, Deadline.after(60), probe_set.probes, tf=probe_set.tf)
    run_checks(pipeline.host_checks(), ctx)
    return ctx


def test_on_hopper_the_training_beat_says_the_first_start_jit_compiles(tmp_path: Path) -> None:
    """The issue's example, from the facts: H100s (compute capability 9.0) and TensorFlow 2.21's wheel,
    which carries sm_89 code and compute_90 PTX, so the first start JIT-compiles every kernel."""
    ctx = _host_context(tmp_path, hosts.probes(hosts.nvml_h100s(), tf=hosts.recorded_tf(gpus=2)))
    beat = Heartbeat(Progress(), HumanReport(io.StringIO(), colour=False), 600.0, lambda s: why_slow(s, ctx))
    assert beat.line("smoke.training", 130.0) == (
        "smoke.training: still running after 2m10s (deadline 10m; first start on compute capability 9.0"
        " JIT-compiles kernels)"
    )
    assert why_slow("smoke.accuracy", ctx) == ""  # judged from the results: nothing runs there


def test_gpus_with_native_kernels_and_a_dry_run_get_no_jit_note(tmp_path: Path) -> None:
    native = _host_context(
        tmp_path / "a", hosts.probes(hosts.nvml_two_healthy(), tf=hosts.recorded_tf(gpus=2))
    )
    assert why_slow("smoke.training", native) == ""
    assert (
        why_slow("smoke.strategy", native)
        == "CUDA initialises every GPU and the model is built on each replica"
    )
    dry = _host_context(tmp_path / "b", hosts.probes(), cpu_replicas=2)
    assert why_slow("smoke.strategy", dry) == ""
