"""The child supervisor with real processes (plain Python children, no TensorFlow)."""

from __future__ import annotations

import io
import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tfdist_validate.signals import signals_deferred
from tfdist_validate.smoke.process import ChildProcess, describe_exit, group_members
from tfdist_validate.smoke.run import tail_lines


def _alive(pid: int) -> bool:
    """True while /proc has a non-zombie process with this id."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def _child(tmp_path: Path, code: str) -> tuple[ChildProcess, io.StringIO]:
    out = io.StringIO()
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(code))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUNBUFFERED": "1"}
    return ChildProcess([sys.executable, str(script)], env, tmp_path / "child.log", out), out


def test_lines_are_relayed_and_stderr_goes_to_the_log(tmp_path: Path) -> None:
    child, out = _child(
        tmp_path,
        """
        import sys
        print("replicas=2")
        print("log line", file=sys.stderr)
        sys.stdout.write("no newline at the end")
        sys.exit(3)
        """,
    )
    try:
        child.start()
        child.relay_until(time.monotonic() + 60)
    finally:
        child.stop()
    assert out.getvalue() == "replicas=2\nno newline at the end\n"
    assert list(child.relay.kept) == ["replicas=2", "no newline at the end"]
    assert (child.timed_out, child.returncode) == (False, 3)
    assert tail_lines(tmp_path / "child.log", 5) == ["log line"]


def test_deadline_kills_the_whole_group_grandchildren_included(tmp_path: Path) -> None:
    # The grandchild would outlive a kill of the child alone: only killing the group reaches it.
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent(
            """
            import subprocess, sys, time
            grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            print("Epoch 2/500", flush=True)
            print(f"grandchild={grandchild.pid}", flush=True)  # last: once it is read, all else was relayed
            time.sleep(600)
            """
        )
    )
    out = io.StringIO()
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUNBUFFERED": "1"}
    child = ChildProcess(
        [sys.executable, str(script)], env, tmp_path / "child.log", out, capture="grandchild="
    )
    try:
        child.start()
        # the event, however long the machine takes to get there (60 s: hang protection only) ...
        answer = child.read_captured(time.monotonic() + 60)
        # ... then a deadline that the sleeping child can only meet by being killed
        child.relay_until(time.monotonic() + 0.5)
    finally:
        child.stop()
    assert child.pid is not None and answer is not None
    grandchild = int(answer.split("=")[1])
    assert child.timed_out
    assert describe_exit(child.returncode) == "killed by SIGKILL"
    assert list(child.relay.kept)[-1] == "Epoch 2/500"  # what it printed so far
    assert child.leftover_pids == []
    assert group_members(child.pid) == []
    assert not _alive(child.pid) and not _alive(grandchild)


def test_a_child_that_closes_stdout_but_keeps_running_still_meets_the_deadline(tmp_path: Path) -> None:
    child, _ = _child(
        tmp_path,
        """
        import os, time
        os.close(1)
        time.sleep(600)
        """,
    )
    try:
        child.start()
        child.relay_until(time.monotonic() + 2)
    finally:
        child.stop()
    assert child.timed_out and child.returncode == -signal.SIGKILL


def test_an_exception_while_relaying_still_kills_the_child(tmp_path: Path) -> None:
    """What app.py's Terminated (SIGTERM) does to the check: the finally must leave nothing behind."""

    class Stop(BaseException):
        pass

    child, _ = _child(tmp_path, "import time\nprint('started', flush=True)\ntime.sleep(600)\n")

    def interrupted_relay(_deadline: float) -> None:
        raise Stop

    with pytest.raises(Stop):
        try:
            child.start()
            interrupted_relay(time.monotonic() + 60)
        finally:
            child.stop()
    assert child.pid is not None and not _alive(child.pid)
    child.stop()  # idempotent


def test_group_members_reads_proc_stat_with_awkward_command_names(tmp_path: Path) -> None:
    # /proc/<pid>/stat: pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    for pid, comm, state, pgrp in [
        (101, "python3", "S", 101),
        (102, "a) b (c", "R", 101),
        (103, "zombie", "Z", 101),
        (104, "other", "S", 7),
    ]:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) {state} 1 {pgrp} {pgrp} 0 -1 4194560\n")
    (tmp_path / "self").mkdir()
    assert sorted(group_members(101, tmp_path)) == [101, 102]


def test_signals_are_held_during_cleanup_and_delivered_after() -> None:
    seen: list[int] = []
    # another thread, as in the real run (the whole-run watchdog's timer): the kernel may pick it
    bystander = threading.Timer(60, lambda: None)
    bystander.start()
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: seen.append(signum))
    try:
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            assert seen == []  # held while the group is killed and the facts recorded
        assert seen == [signal.SIGTERM]  # delivered once, to the handler that was there before
        assert signal.getsignal(signal.SIGTERM) is not None
    finally:
        signal.signal(signal.SIGTERM, previous)
        bystander.cancel()


def test_describe_exit() -> None:
    assert describe_exit(0) == "exit status 0"
    assert describe_exit(-11) == "killed by SIGSEGV"
    assert describe_exit(None).startswith("still running after SIGKILL")
