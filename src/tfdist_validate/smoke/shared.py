"""`run`'s one TensorFlow process: started with the run, it gives the TensorFlow layer its facts and then runs
the smoke test, so TensorFlow is imported once per run instead of once per layer, and that import (seconds)
overlaps the host checks.

    start()        -> the child starts importing TensorFlow at once (this touches no GPU)
    facts(...)     -> the tensorflow.import check, once the driver and health layers allowed it: the child
                      lists the GPUs (CUDA is initialised here) and answers with TensorFlow's facts
    claim(spec)    -> the smoke test, in the same process (smoke/run.py relays, judges and stops it)
    close()        -> kills the child unless the smoke test claimed it (an earlier layer failed, or the run
                      was `check`-like and never needed it); always called when the run ends
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from tfdist_validate.context import Context
from tfdist_validate.probes import tf_facts
from tfdist_validate.probes.tf_facts import TfFacts
from tfdist_validate.signals import signals_deferred
from tfdist_validate.smoke.process import ChildProcess, new_workdir
from tfdist_validate.smoke.spec import ChildSpec


def serve_argv(results_path: Path) -> list[str]:
    return [sys.executable, "-m", "tfdist_validate.smoke.child", "--serve", str(results_path)]


class SharedChild:
    def __init__(
        self,
        env: Mapping[str, str],
        out: TextIO,
        argv: Sequence[str] | None = None,
        before_line: Callable[[], None] = lambda: None,
    ) -> None:
        self.log_path, self.results_path = new_workdir()
        argv = list(argv) if argv is not None else serve_argv(self.results_path)
        self.child = ChildProcess(argv, env, self.log_path, out, tf_facts.MARKER, before_line)
        self.answered = False  # facts were delivered: TensorFlow imported and the child waits for "smoke"
        self.claimed = False

    @classmethod
    def for_run(cls, ctx: Context) -> SharedChild:
        from tfdist_validate.smoke.run import child_env

        return cls(child_env(ctx), ctx.out, before_line=ctx.clear_status)

    def start(self) -> None:
        with signals_deferred():  # no window in which a child exists that close() would not know of
            self.child.start()

    def facts(self, _env: Mapping[str, str], timeout_s: float) -> TfFacts:
        """A TfFactsProbe (the child already runs under the run's environment). On a timeout, or a child that
        ends without answering, the child is killed and the facts say why, as tf_facts.collect's do."""
        deadline = time.monotonic() + timeout_s
        self.child.send(json.dumps({"do": "facts"}))  # a dead child fails here, and the read finds EOF
        line = self.child.read_captured(deadline)
        if line is not None:
            self.answered = True
            return tf_facts.from_json(json.loads(line[len(tf_facts.MARKER) :]), self._log_tail())
        ended = self.child.eof
        self.close()
        if ended:
            from tfdist_validate.smoke.run import describe_exit

            problem = (
                f"the TensorFlow process ended ({describe_exit(self.child.returncode)}) without reporting"
            )
        else:
            problem = f"importing TensorFlow and listing its GPUs did not finish within {timeout_s:.0f} s"
        return TfFacts(False, probe_error=problem, log=self._log_tail(), timed_out=not ended)

    def claim(self, spec: ChildSpec) -> ChildProcess | None:
        """Hand the child to the smoke test with its spec; None when it cannot run it (start a fresh one)."""
        if self.claimed or not self.answered or not self.child.alive():
            return None
        self.claimed = True
        self.child.send(json.dumps({"do": "smoke", "spec": asdict(spec)}))
        return self.child

    def close(self) -> None:
        """Kill the child if the smoke test did not take it over (that one is stopped by smoke/run.py)."""
        if not self.claimed:
            with signals_deferred():
                self.child.stop()

    def kill(self) -> None:
        """For the whole-run watchdog's last moment: SIGKILL the group now, without waiting for anything."""
        pid = self.child.pid
        if pid is not None and not self.child.stopped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    def _log_tail(self) -> str:
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(max(0, self.log_path.stat().st_size - tf_facts.LOG_TAIL))
                return handle.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
