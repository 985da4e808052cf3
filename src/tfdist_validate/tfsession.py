"""The one home of the TensorFlow process: every TensorFlow import of a run happens in a child that a
`TensorFlowSession` starts, answers through and kills. Checks and the smoke runner receive a session; nobody
swaps it, and nothing else starts a TensorFlow child.

    start()             begin whatever can begin early (the shared session imports TensorFlow at once)
    facts(timeout_s)    TensorFlow's facts for its layer (version, build, GPUs), within the timeout
    start_smoke(spec)   a started smoke-test child; the caller relays it until its deadline and stops it
    kill()              the whole-run watchdog's last moment: SIGKILL now, wait for nothing
    close()             always called when the run ends: nothing of ours is left running

Three sessions: `SharedSession` (`run`: one process answers the facts and then runs the smoke test, so
TensorFlow is imported once and the import overlaps the host checks), `OneShotSession` (`check`, and the
fallback: a probe child for the facts, a fresh child for the smoke test) and `RecordedSession` (recorded
facts, for tests and `replay`-style use; its smoke test is a real fresh child).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Protocol, TextIO

import tfdist_validate
from tfdist_validate.probes import tf_facts
from tfdist_validate.probes.tf_facts import TfFacts
from tfdist_validate.signals import signals_deferred
from tfdist_validate.smoke.process import ChildProcess, describe_exit, new_workdir, read_tail
from tfdist_validate.smoke.spec import ChildSpec


@dataclass(frozen=True)
class SmokeChild:
    """A started smoke-test child and where it writes: its TensorFlow log and its results file."""

    process: ChildProcess
    spec: ChildSpec  # as sent, with the results path the session chose
    log_path: Path
    results_path: Path


class TensorFlowSession(Protocol):
    def start(self) -> None: ...

    def facts(self, timeout_s: float, list_gpus: bool = True) -> TfFacts: ...

    def start_smoke(self, spec: ChildSpec) -> SmokeChild: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of every TensorFlow child: the run's, unbuffered, with this package importable."""
    result = dict(env)
    result["PYTHONUNBUFFERED"] = "1"  # Keras' epoch lines must reach the parent as they are printed
    # CUDA's default numbering is fastest first; NVML's is PCI bus order. The same order in both lets the
    # health layer and the hints name the GPU TensorFlow calls GPU:k (host/visible.py). A user's own choice
    # stands (then the health layer judges every GPU).
    result.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    # The child imports this package; make that work from a source tree that was not pip-installed too.
    package_root = str(Path(tfdist_validate.__file__).resolve().parents[1])
    result["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, result.get("PYTHONPATH")]))
    return result


def _kill_group(process: ChildProcess | None) -> None:
    if process is None or process.pid is None or process.stopped:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


class OneShotSession:
    """A child per question: the facts probe (`python -m tfdist_validate.probes.tf_facts`) and a fresh smoke
    child (`python -m tfdist_validate.smoke.child SPEC`)."""

    def __init__(
        self, env: Mapping[str, str], out: TextIO, before_line: Callable[[], None] = lambda: None
    ) -> None:
        self.env = child_env(env)
        self.out = out
        self.before_line = before_line
        self.smoke_child: ChildProcess | None = None

    def start(self) -> None:
        """Nothing to start early: `check` gets its verdict on a broken node without importing TensorFlow."""

    def facts(self, timeout_s: float, list_gpus: bool = True) -> TfFacts:
        return tf_facts.collect(self.env, timeout_s, list_gpus)

    def start_smoke(self, spec: ChildSpec) -> SmokeChild:
        log_path, results_path = new_workdir()
        spec = replace(spec, results_path=str(results_path))
        argv = [sys.executable, "-m", "tfdist_validate.smoke.child", spec.to_json()]
        process = ChildProcess(argv, self.env, log_path, self.out, before_line=self.before_line)
        self.smoke_child = process
        with signals_deferred():  # no window in which a child exists that stop() would not know of
            process.start()
        return SmokeChild(process, spec, log_path, results_path)

    def kill(self) -> None:
        _kill_group(self.smoke_child)

    def close(self) -> None:
        if self.smoke_child is not None:
            with signals_deferred():
                self.smoke_child.stop()  # idempotent: the smoke runner normally stopped it already


def serve_argv(results_path: Path) -> list[str]:
    return [sys.executable, "-m", "tfdist_validate.smoke.child", "--serve", str(results_path)]


class SharedSession:
    """`run`'s one TensorFlow process: started with the run (the import, seconds, overlaps the host checks),
    it lists the GPUs for the TensorFlow layer when asked, then runs the smoke test in the same process. If
    it cannot (it died, or never answered), the smoke test falls back to a fresh child."""

    def __init__(
        self,
        env: Mapping[str, str],
        out: TextIO,
        before_line: Callable[[], None] = lambda: None,
        argv: Sequence[str] | None = None,
    ) -> None:
        self.fallback = OneShotSession(env, out, before_line)
        self.log_path, self.results_path = new_workdir()
        argv = list(argv) if argv is not None else serve_argv(self.results_path)
        self.child = ChildProcess(argv, self.fallback.env, self.log_path, out, tf_facts.MARKER, before_line)
        self.answered = False  # facts were delivered: TensorFlow imported and the child waits for "smoke"
        self.claimed = False  # the smoke test took the child over; stopping it is the smoke runner's job

    def start(self) -> None:
        with signals_deferred():  # no window in which a child exists that close() would not know of
            self.child.start()

    def facts(self, timeout_s: float, list_gpus: bool = True) -> TfFacts:
        """On a timeout, or a child that ends without answering, the child is killed and the facts say why,
        as the one-shot probe's do."""
        deadline = time.monotonic() + timeout_s
        self.child.send(
            json.dumps({"do": "facts", "list_gpus": list_gpus})
        )  # a dead child fails here, and the read finds EOF
        line = self.child.read_captured(deadline)
        if line is not None:
            self.answered = True
            return tf_facts.from_json(json.loads(line[len(tf_facts.MARKER) :]), self._log_tail())
        ended = self.child.eof
        self._stop_unclaimed()
        if ended:
            problem = (
                f"the TensorFlow process ended ({describe_exit(self.child.returncode)}) without reporting"
            )
        else:
            problem = f"importing TensorFlow and listing its GPUs did not finish within {timeout_s:.0f} s"
        return TfFacts(False, probe_error=problem, log=self._log_tail(), timed_out=not ended)

    def start_smoke(self, spec: ChildSpec) -> SmokeChild:
        if self.claimed or not self.answered or not self.child.alive():
            return self.fallback.start_smoke(spec)
        self.claimed = True
        spec = replace(spec, results_path=str(self.results_path))
        self.child.send(json.dumps({"do": "smoke", "spec": asdict(spec)}))
        return SmokeChild(self.child, spec, self.log_path, self.results_path)

    def kill(self) -> None:
        _kill_group(self.child)
        self.fallback.kill()

    def close(self) -> None:
        self._stop_unclaimed()
        self.fallback.close()

    def _stop_unclaimed(self) -> None:
        if not self.claimed:  # a claimed child is stopped by the smoke runner, which records how it ended
            with signals_deferred():
                self.child.stop()

    def _log_tail(self) -> str:
        return read_tail(self.log_path, tf_facts.LOG_TAIL)


class RecordedSession(OneShotSession):
    """Facts recorded elsewhere (a fixture, a user's report) instead of a probe child; `calls` counts the
    questions, so a test can tell that a layer never asked."""

    def __init__(
        self, recorded: TfFacts, env: Mapping[str, str] | None = None, out: TextIO = sys.stdout
    ) -> None:
        super().__init__(env if env is not None else os.environ, out)
        self.recorded = recorded
        self.calls: list[float] = []
        self.listed_gpus: list[bool] = []  # what each question asked: a dry run must never list GPUs

    def facts(self, timeout_s: float, list_gpus: bool = True) -> TfFacts:
        self.calls.append(timeout_s)
        self.listed_gpus.append(list_gpus)
        return self.recorded


def for_command(
    command: str, env: Mapping[str, str], out: TextIO, before_line: Callable[[], None] = lambda: None
) -> TensorFlowSession:
    """`run` shares one TensorFlow process between its layers; `check` asks a one-shot probe, and only if
    the layers below let it."""
    if command == "run":
        return SharedSession(env, out, before_line)
    return OneShotSession(env, out, before_line)
