"""run / check: run the pipeline under the watchdog, decide the verdict, write every report."""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tfdist_validate import TOOL_NAME, __version__, pipeline, tfsession
from tfdist_validate.cluster import tf_config
from tfdist_validate.cluster.tf_config import ClusterConfig
from tfdist_validate.context import Context, Deadline
from tfdist_validate.errors import Terminated, UsageError
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.probes import Probes
from tfdist_validate.record import RECORDED_ENV, Recording, RecordingSession, recording_probes
from tfdist_validate.report import json_report, termination
from tfdist_validate.report.files import WriteError, shown, write_output
from tfdist_validate.report.heartbeat import Heartbeat, HeartbeatTiming
from tfdist_validate.report.human import HumanReport, is_terminal, use_colour
from tfdist_validate.result import CheckResult, Layer, failed
from tfdist_validate.runner import Check, run_checks
from tfdist_validate.settings import Settings
from tfdist_validate.signals import signals_deferred, stop_signals_raise
from tfdist_validate.tfsession import TensorFlowSession
from tfdist_validate.verdict import Verdict, decide
from tfdist_validate.watchdog import Watchdog

if TYPE_CHECKING:
    pass


# The shortest time a report or termination message gets to go out through a slow FIFO or device.
REPORT_WRITE_MIN_S = 2.0


def _check_report_path(settings: Settings) -> None:
    """Fail before the run, not after ten minutes of it, when the report could never be written."""
    if settings.json and settings.json != "-":
        source = settings.sources.get("json", "--json")
        try:
            parent = Path(settings.json).resolve().parent
            found = parent.is_dir()
        except (OSError, RuntimeError) as err:  # a name too long for the file system, a symlink loop
            raise UsageError(
                f"{source}: json: {shown(settings.json)}: {getattr(err, 'strerror', err)}"
            ) from None
        if not found:
            raise UsageError(f"{source}: json: folder {shown(parent)!r} does not exist")


def _ok_summary(command: str, settings: Settings, cluster: ClusterConfig | None) -> str:
    if settings.cpu_replicas is not None:
        devices = f"{settings.cpu_replicas} logical CPU device(s)"
        if cluster is not None and cluster.is_multi_worker:  # one CPU device per worker, whatever was asked
            devices = f"{cluster.num_workers} workers, one logical CPU device each,"
        return f"dry run on {devices} passed: this proves the TensorFlow software path, not the GPUs"
    if command == "check":
        return "the fast layers passed; `tfdist-validate run` proves training itself"
    return "synchronized multi-GPU TensorFlow training can run here"


class Session:
    """One run or check: its results so far, and the one place that finishes it (normally or by watchdog)."""

    def __init__(
        self,
        command: str,
        settings: Settings,
        env: Mapping[str, str],
        probes: Probes,
        stdout: TextIO,
        stderr: TextIO,
        cluster: ClusterConfig | None = None,
        tf: TensorFlowSession | None = None,
        replay_of: str | None = None,
    ) -> None:
        self.command = command
        self.replay_of = replay_of
        self.settings = settings
        self.env = env
        self.stdout = stdout
        self.started_at = dt.datetime.now(dt.timezone.utc)
        self.t0 = time.monotonic()
        self.human = HumanReport(
            stderr,
            use_colour(stderr, env),
            verbose=settings.verbose,
            tty=is_terminal(stderr) and env.get("TERM") != "dumb",
        )
        out = stderr if settings.json == "-" else stdout
        deadline = Deadline.after(settings.timeout)
        # every answer a verdict is decided from goes into the report, so that `replay` can decide it again
        self.recording = Recording(
            tf_config=env.get("TF_CONFIG"), cuda_env={k: env[k] for k in RECORDED_ENV if k in env}
        )
        session = tf or tfsession.for_command(command, env, out, self.human.clear_status)
        self.ctx = Context(
            settings,
            command,
            env,
            deadline,
            recording_probes(probes, self.recording),
            cluster=cluster,
            out=out,
            clear_status=self.human.clear_status,
            tf=RecordingSession(session, self.recording),
        )
        self.results: list[CheckResult] = []
        self.current: Check | None = None
        self._finish_lock = threading.Lock()
        self._finished = False

    def start(self, check: Check) -> None:
        self.current = check
        self.ctx.progress.begin(check.id)

    def record(self, result: CheckResult) -> None:
        self.current = None
        self.ctx.progress.end()
        self.results.append(result)
        self.human.check(result)

    def heartbeat(self, timing: HeartbeatTiming | None) -> Heartbeat:
        """Stages that run for more than a few seconds say so on stderr, with the run's deadline."""
        from tfdist_validate.checks.slow import why_slow

        return Heartbeat(
            self.ctx.progress,
            self.human,
            self.settings.timeout,
            why_slow=lambda stage: why_slow(stage, self.ctx),
            timing=timing,
        )

    def cut_short(self, summary: str, hint: str) -> None:
        """The check in progress ends as a TIMEOUT failure; later checks are simply not run."""
        check = self.current
        check_id, layer = (check.id, check.layer) if check else ("run.deadline", Layer.RUNTIME)
        outcome = failed(ExitCode.TIMEOUT, summary, hint)
        self.record(CheckResult.from_outcome(check_id, layer, outcome, 0.0))

    def finish(self) -> int:
        with self._finish_lock:
            if self._finished:
                return ExitCode.TIMEOUT
            self._finished = True
        verdict = decide(self.results, _ok_summary(self.command, self.settings, self.ctx.cluster))
        report = json_report.build(
            command=self.command,
            settings=self.settings,
            env=self.env,
            started_at=self.started_at,
            duration_s=time.monotonic() - self.t0,
            results=self.results,
            verdict=verdict,
            facts=self.ctx.sections,
            recorded=self.recording.to_json(),
        )
        self._write_reports(report, verdict)
        self.human.verdict(verdict, self.settings.json)
        return int(verdict.code)

    def _write_reports(self, report: dict[str, Any], verdict: Verdict) -> None:
        text = json_report.dumps(report)
        # a FIFO or device that is slow to take the report is given until the deadline, and at least a moment
        deadline = max(self.ctx.deadline.at, time.monotonic() + REPORT_WRITE_MIN_S)
        if self.settings.json == "-":
            try:
                self.stdout.write(text)
                self.stdout.flush()
            except (OSError, ValueError) as err:  # a full or closed stdout: say so, keep the verdict
                self.human.note(
                    f"could not write the report to stdout: {getattr(err, 'strerror', None) or err}"
                )
        elif self.settings.json:
            try:
                write_output(self.settings.json, text, deadline)
            except WriteError as err:
                self.human.note(f"could not write the report to {shown(self.settings.json)}: {err.strerror}")
        # a replay tells the pod it runs in nothing unless asked: the verdict is about another node
        path = self.settings.termination_log or (None if self.replay_of else termination.default_path())
        if path:
            message = termination.compose(verdict, self.results, self.settings.json)
            problem = termination.write(path, message, deadline)
            if problem:
                self.human.note(problem)


def execute(
    command: str,
    settings: Settings,
    env: Mapping[str, str],
    *,
    probes: Probes | None = None,
    tf: TensorFlowSession | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    heartbeat: HeartbeatTiming | None = None,
    replay_of: str | None = None,
) -> int:
    """`tf`: the TensorFlow session (tfsession.py); by default `run` shares one process, `check` asks once.
    `replay_of`: the report whose recorded facts `probes` and `tf` answer from (replay.py)."""
    _check_report_path(settings)
    cluster = tf_config.load(env)  # a bad TF_CONFIG is exit 2 before anything runs
    session = Session(
        command,
        settings,
        env,
        probes or Probes(),
        stdout or sys.stdout,
        stderr or sys.stderr,
        cluster,
        tf,
        replay_of,
    )
    detail = f"{settings.cpu_replicas} logical CPU replicas" if settings.cpu_replicas else ""
    if replay_of:
        detail = f"replay of {shown(replay_of)}" + (f", {detail}" if detail else "")
    session.human.header(TOOL_NAME, __version__, command, detail)
    tensorflow = session.ctx.tf

    def on_watchdog() -> None:
        tensorflow.kill()
        session.cut_short(
            f"the whole run exceeded --timeout {settings.timeout:g} s and the validator was stuck",
            "look for a hung driver call (`nvidia-smi` hanging too?) or raise --timeout",
        )
        code = session.finish()
        os._exit(code)

    try:
        with (
            stop_signals_raise(),
            Watchdog(settings.timeout, on_watchdog),
            session.heartbeat(heartbeat),
        ):
            try:
                tensorflow.start()  # `run`: the TensorFlow import begins now, beside the host checks
                checks = pipeline.build(command)
                run_checks(checks, session.ctx, on_start=session.start, on_result=session.record)
            finally:
                tensorflow.close()  # nothing of it is left: an unneeded child, a child an error left behind
    except Terminated as stop:
        session.cut_short(
            f"stopped by {stop} before the verdict (the pod was deleted or the run interrupted)",
            "nothing was proven; run the validation again to completion",
        )
    # The verdict is decided: a stop signal now must not cut the reports short (that would leave a pod with
    # no report and exit 143); the process ends right after anyway.
    with signals_deferred(redeliver=False):
        return session.finish()
