"""`run`'s one TensorFlow process (tfsession.SharedSession): the handshake, its failure paths, its end."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import clean_env, run_cli
from tfdist_validate import tfsession
from tfdist_validate.probes import tf_facts
from tfdist_validate.settings import Settings
from tfdist_validate.smoke.process import group_members
from tfdist_validate.smoke.run import DRY_RUN_ALLREDUCE_MIB, allreduce_mib
from tfdist_validate.smoke.spec import ChildSpec
from tfdist_validate.tfsession import SharedSession, SmokeChild


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "PYTHONUNBUFFERED": "1"}


def _script(tmp_path: Path, code: str) -> list[str]:
    script = tmp_path / "fake_child.py"
    script.write_text(textwrap.dedent(code))
    return [sys.executable, str(script)]


def _spec(results_path: Path) -> ChildSpec:
    return ChildSpec(str(results_path), None, 2, 3, 16, 8.0, 60.0)


# A stand-in that speaks the protocol: answers "facts" with recorded-shaped facts, records the smoke spec.
PROTOCOL_CHILD = f"""
    import json, sys
    print("a line before the answer")
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "facts":
            print({tf_facts.MARKER!r} + json.dumps({{"imported": True, "version": "2.21.0", "gpus": []}}))
            print("a line after the answer")
            sys.stdout.flush()
        elif command["do"] == "smoke":
            print("smoke spec " + json.dumps(command["spec"], sort_keys=True), flush=True)
            sys.exit(0)
"""


def test_facts_then_smoke_over_one_process(tmp_path: Path) -> None:
    out = io.StringIO()
    shared = SharedSession(_env(), out, argv=_script(tmp_path, PROTOCOL_CHILD))
    shared.start()
    try:
        facts = shared.facts(30)
        assert (facts.imported, facts.version, facts.probe_error) == (True, "2.21.0", None)
        assert shared.answered and shared.child.alive()
        smoke = shared.start_smoke(_spec(Path("ignored")))
        assert smoke.process is shared.child and shared.claimed
        spec = smoke.spec
        assert spec.results_path == str(shared.results_path)  # the session decides where its child writes
        smoke.process.relay_until(time.monotonic() + 30)
    finally:
        shared.close()  # claimed: stopping it is the smoke runner's job
        assert not shared.child.stopped
        shared.child.stop()
    relayed = out.getvalue().splitlines()
    # the answer is not output: the user sees every other line, in order
    assert relayed[:2] == ["a line before the answer", "a line after the answer"]
    assert relayed[2] == "smoke spec " + json.dumps(json.loads(spec.to_json()), sort_keys=True)
    assert shared.child.returncode == 0


def test_no_answer_within_the_timeout_kills_the_group(tmp_path: Path) -> None:
    code = """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(60)
    """
    argv = _script(tmp_path, code)
    shared = SharedSession(_env(), io.StringIO(), argv=argv)
    shared.start()
    pid = shared.child.pid
    assert pid is not None
    facts = shared.facts(1)
    assert not facts.imported
    assert facts.probe_error == "importing TensorFlow and listing its GPUs did not finish within 1 s"
    assert facts.timed_out
    assert shared.child.stopped and shared.child.returncode == -signal.SIGKILL
    assert group_members(pid) == []  # the grandchild too
    assert _smoke_goes_to_the_fallback(shared)  # the smoke test starts a fresh child instead


def _smoke_goes_to_the_fallback(shared: SharedSession) -> bool:
    """Whether start_smoke would start a fresh child (recorded, not started: that would import TensorFlow)."""
    asked: list[ChildSpec] = []

    def fresh(spec: ChildSpec) -> SmokeChild:
        asked.append(spec)
        return SmokeChild(shared.child, spec, shared.log_path, shared.results_path)

    shared.fallback.start_smoke = fresh  # type: ignore[method-assign]
    shared.start_smoke(_spec(shared.results_path))
    return len(asked) == 1 and not shared.claimed


def test_a_child_that_ends_without_answering_is_named_with_its_log(tmp_path: Path) -> None:
    code = """
        import sys
        print("ImportError: libcudart.so.12: cannot open shared object file", file=sys.stderr)
        sys.exit(5)
    """
    shared = SharedSession(_env(), io.StringIO(), argv=_script(tmp_path, code))
    shared.start()
    facts = shared.facts(30)
    assert facts.probe_error == "the TensorFlow process ended (exit status 5) without reporting"
    assert not facts.timed_out  # it ended by itself: an import failure (20), not a deadline (50)
    assert facts.missing_libraries() == ["libcudart.so.12"]  # the log is kept as the probe's is


def test_real_tensorflow_answers_and_an_unclaimed_child_is_killed(tmp_path: Path) -> None:
    env = clean_env({"PYTHONUNBUFFERED": "1"})
    shared = SharedSession(env, io.StringIO())
    assert shared.child.argv[-2:] == ["--serve", str(shared.results_path)]
    shared.start()
    try:
        facts = shared.facts(240)
    finally:
        shared.close()
    import tensorflow as tf

    assert facts.imported and facts.version == tf.__version__ and facts.probe_error is None
    assert facts.gpus == ()  # this machine has none; the answer is TensorFlow's own list
    assert shared.child.returncode == -signal.SIGKILL  # it waited for "smoke", which never came
    assert group_members(shared.child.pid or 0) == []


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[SharedSession]:
    """Every SharedSession the run starts."""
    seen: list[SharedSession] = []
    original = SharedSession.start

    def start(self: SharedSession) -> None:
        seen.append(self)
        original(self)

    monkeypatch.setattr(tfsession.SharedSession, "start", start)
    return seen


def test_run_on_a_node_without_gpu_access_kills_the_child_it_started(
    tmp_path: Path, started: list[SharedSession]
) -> None:
    # This machine has no /dev/nvidia* nodes: the runtime layer fails, before TensorFlow's layer is reached.
    report_path = tmp_path / "report.json"
    done = run_cli(["run", "--json", str(report_path)], {"TMPDIR": str(tmp_path)})
    report = json.loads(report_path.read_text())
    assert done.code == report["verdict"]["code"] and 10 <= done.code < 20, done.stderr
    tf_import = next(c for c in report["checks"] if c["id"] == "tensorflow.import")
    assert tf_import["blocked_by"] is not None
    [shared] = started
    assert shared.child.stopped and not shared.claimed and not shared.answered
    assert shared.child.returncode == -signal.SIGKILL
    assert group_members(shared.child.pid or 0) == []


def test_check_starts_no_tensorflow_child(tmp_path: Path, started: list[SharedSession]) -> None:
    done = run_cli(["check"], {"TMPDIR": str(tmp_path)})
    assert 10 <= done.code < 20
    assert started == []


@pytest.mark.slow
def test_run_imports_tensorflow_once(
    tmp_path: Path, started: list[SharedSession], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TensorFlow layer's facts and the smoke test come from the same process; no other child starts."""
    spawned: list[list[str]] = []
    original = subprocess.Popen.__init__

    def popen(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        spawned.append([str(a) for a in args])
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen)
    report_path = tmp_path / "report.json"
    done = run_cli(["run", "--cpu-replicas", "2", "--json", str(report_path)], {"TMPDIR": str(tmp_path)})
    assert done.code == 0, done.stderr
    report = json.loads(report_path.read_text())
    [shared] = started
    assert shared.answered and shared.claimed
    assert spawned == [shared.child.argv]
    assert report["smoke"]["child"]["pid"] == shared.child.pid
    assert report["smoke"]["child"]["results_path"] == str(shared.results_path)
    assert report["smoke"]["final_val_binary_accuracy"] == pytest.approx(0.9609375)
    # the same log holds the import (the TensorFlow layer's evidence) and the training
    log = Path(report["smoke"]["log"]["path"]).read_text()
    assert "CPU dry run on 2 logical CPU device(s)" in log
    assert report["tensorflow"]["imported"] is True


def test_a_dry_run_times_a_smaller_all_reduce_unless_told_otherwise() -> None:
    assert (
        allreduce_mib(Settings(cpu_replicas=2, sources={"allreduce_mib": "default"})) == DRY_RUN_ALLREDUCE_MIB
    )
    assert (
        allreduce_mib(
            Settings(cpu_replicas=2, allreduce_mib=64.0, sources={"allreduce_mib": "--allreduce-mib"})
        )
        == 64.0
    )
    assert (
        allreduce_mib(Settings(cpu_replicas=2, allreduce_mib=2.0, sources={"allreduce_mib": "default"}))
        == 2.0
    )
    assert allreduce_mib(Settings(sources={"allreduce_mib": "default"})) == 64.0  # GPUs: the full size
