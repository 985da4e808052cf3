"""run / check: run the pipeline under the watchdog, decide the verdict, write every report."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from tfdist_validate import TOOL_NAME, __version__, pipeline
from tfdist_validate.cluster import tf_config
from tfdist_validate.cluster.tf_config import ClusterConfig
from tfdist_validate.context import Context, Deadline
from tfdist_validate.errors import UsageError
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.probes import Probes, collect_tf_facts
from tfdist_validate.report import json_report, termination
from tfdist_validate.report.files import write_atomically
from tfdist_validate.report.human import HumanReport, use_colour
from tfdist_validate.result import CheckResult, Layer, failed
from tfdist_validate.runner import Check, run_checks
from tfdist_validate.settings import Settings
from tfdist_validate.verdict import Verdict, decide
from tfdist_validate.watchdog import Watchdog

if TYPE_CHECKING:
    from tfdist_validate.smoke.shared import SharedChild


class Terminated(BaseException):
    """SIGTERM (the kubelet deleting the pod) or SIGINT: stop, clean up children, still write the report.

    A BaseException so that no check's `except Exception` swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def _signals_raise_terminated() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _check_report_path(settings: Settings) -> None:
    """Fail before the run, not after ten minutes of it, when the report could never be written."""
    if settings.json and settings.json != "-":
        parent = Path(settings.json).resolve().parent
        if not parent.is_dir():
            raise UsageError(
                f"{settings.sources.get('json', '--json')}: json: folder {str(parent)!r} does not exist"
            )


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
    ) -> None:
        self.command = command
        self.settings = settings
        self.env = env
        self.stdout = stdout
        self.started_at = dt.datetime.now(dt.timezone.utc)
        self.t0 = time.monotonic()
        out = stderr if settings.json == "-" else stdout
        deadline = Deadline.after(settings.timeout)
        self.ctx = Context(settings, command, env, deadline, probes, cluster=cluster, out=out)
        self.human = HumanReport(stderr, use_colour(stderr, env))
        self.results: list[CheckResult] = []
        self.current: Check | None = None
        self._finish_lock = threading.Lock()
        self._finished = False

    def start(self, check: Check) -> None:
        self.current = check

    def record(self, result: CheckResult) -> None:
        self.current = None
        self.results.append(result)
        self.human.check(result)

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
            facts=self.ctx.facts,
        )
        self._write_reports(report, verdict)
        self.human.verdict(verdict, self.settings.json)
        return int(verdict.code)

    def _write_reports(self, report: dict[str, Any], verdict: Verdict) -> None:
        text = json_report.dumps(report)
        if self.settings.json == "-":
            self.stdout.write(text)
            self.stdout.flush()
        elif self.settings.json:
            try:
                write_atomically(self.settings.json, text)
            except OSError as err:
                self.human.note(f"could not write the report to {self.settings.json}: {err.strerror or err}")
        path = self.settings.termination_log or termination.default_path()
        if path:
            problem = termination.write(path, termination.compose(verdict, self.results, self.settings.json))
            if problem:
                self.human.note(problem)


def _start_tensorflow_child(command: str, ctx: Context) -> SharedChild | None:
    """`run` imports TensorFlow once, in one child started now: the import (seconds) overlaps the host
    checks, and the same process answers the TensorFlow layer and then runs the smoke test. Not for `check`
    (a broken node gets its verdict without any TensorFlow import), nor when a test injected the facts."""
    if command != "run" or ctx.probes.tf_facts is not collect_tf_facts or ctx.probes.tf_child is not None:
        return None
    from tfdist_validate.smoke.shared import SharedChild

    shared = SharedChild.for_run(ctx)
    shared.start()
    ctx.probes = replace(ctx.probes, tf_facts=shared.facts, tf_child=shared)
    return shared


def execute(
    command: str,
    settings: Settings,
    env: Mapping[str, str],
    *,
    probes: Probes | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    _check_report_path(settings)
    cluster = tf_config.load(env)  # a bad TF_CONFIG is exit 2 before anything runs
    session = Session(
        command, settings, env, probes or Probes(), stdout or sys.stdout, stderr or sys.stderr, cluster
    )
    detail = f"{settings.cpu_replicas} logical CPU replicas" if settings.cpu_replicas else ""
    session.human.header(TOOL_NAME, __version__, command, detail)

    shared: SharedChild | None = None

    def on_watchdog() -> None:
        if shared is not None:
            shared.kill()
        session.cut_short(
            f"the whole run exceeded --timeout {settings.timeout:g} s and the validator was stuck",
            "look for a hung driver call (`nvidia-smi` hanging too?) or raise --timeout",
        )
        code = session.finish()
        os._exit(code)

    try:
        with _signals_raise_terminated(), Watchdog(settings.timeout, on_watchdog):
            try:
                shared = _start_tensorflow_child(command, session.ctx)
                checks = pipeline.build(command)
                run_checks(checks, session.ctx, on_start=session.start, on_result=session.record)
            finally:
                if shared is not None:
                    shared.close()  # still unclaimed: an earlier layer failed, so no smoke test needs it
    except Terminated as stop:
        session.cut_short(
            f"stopped by {stop} before the verdict (the pod was deleted or the run interrupted)",
            "nothing was proven; run the validation again to completion",
        )
    return session.finish()
