"""Start the smoke-test child in its own process group, relay its stdout live, and kill the whole group.

Every wait has a deadline. The group is killed with SIGKILL before the child is reaped: while the leader is
an unreaped zombie its process id (and so the group id) cannot be reused, so the kill can never hit a
stranger. A process stuck in an uninterruptible driver call survives SIGKILL until the call returns; such
survivors are reported (`leftover_pids`), because they may still hold GPU memory.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

OUTPUT_KEPT = 200  # stdout lines kept for the report; the terminal got all of them
REAP_S = 3.0  # after SIGKILL: how long to wait for the group to disappear (well inside the watchdog's grace)
# Polling step while a process that closed its output finishes exiting: the child usually needs well under
# a millisecond, so a coarse step would only add its own length to every run's verdict.
POLL_S = 0.005


def group_members(pgid: int, proc_root: Path = Path("/proc")) -> list[int]:
    """Live (non-zombie) processes in a process group, from /proc/<pid>/stat."""
    members = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited while we looked
            continue
        # the command name may contain spaces and parentheses: the fields start after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


def describe_exit(returncode: int | None) -> str:
    """How a child ended, in words: "exit status 3", "killed by SIGKILL"."""
    if returncode is None:
        return "still running after SIGKILL (stuck in the kernel or driver)"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def read_tail(path: Path, max_bytes: int) -> str:
    """The last `max_bytes` of a (log) file as text; "" when it cannot be read. Never the whole file: a
    verbose TensorFlow log reaches gigabytes."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - max_bytes))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


WORKDIR_PREFIX = "tfdist-validate-smoke-"
KEEP_WORKDIRS = 10  # the newest smoke folders kept as evidence; older ones of ours are removed


def new_workdir() -> tuple[Path, Path]:
    """A fresh folder for one smoke-test child: (its TensorFlow log, its results file). Kept after the run:
    the log is evidence, for the report and for `tfdist-validate diagnose`; the oldest are pruned."""
    workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
    prune_workdirs(workdir.parent, keep=KEEP_WORKDIRS)
    return workdir / "child.log", workdir / "results.jsonl"


def prune_workdirs(parent: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` smoke folders in `parent`. Only real folders with our prefix, owned by
    this user, are touched: never a symlink, never another user's folder. Returns what was removed."""
    ours = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (
                entry.name.startswith(WORKDIR_PREFIX)
                and stat.S_ISDIR(info.st_mode)
                and info.st_uid == os.getuid()
            ):
                ours.append((info.st_mtime, Path(entry.path)))
    ours.sort(reverse=True)
    removed = []
    for _, folder in ours[keep:]:
        shutil.rmtree(folder, ignore_errors=True)  # rmtree does not follow symlinks inside the folder
        removed.append(folder)
    return removed


class _LineRelay:
    """Forwards complete lines to `out` as they arrive and keeps the last ones for the report.

    Lines that start with `capture` are the child's answers to the parent, not output: they are held in
    `captured` instead.
    """

    def __init__(
        self, out: TextIO, capture: str | None = None, before_line: Callable[[], None] = lambda: None
    ) -> None:
        self.out = out
        self.before_line = before_line
        self.kept: deque[str] = deque(maxlen=OUTPUT_KEPT)
        self.capture = capture
        self.captured: deque[str] = deque()
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            self._emit(line)

    def close(self) -> None:
        if self._partial:
            self._emit(self._partial)
            self._partial = b""

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        if self.capture is not None and line.startswith(self.capture):
            self.captured.append(line)
            return
        self.kept.append(line)
        with contextlib.suppress(OSError, ValueError):  # a closed terminal must not stop the cleanup
            self.before_line()
            self.out.write(line + "\n")
            self.out.flush()


class ChildProcess:
    """One supervised child. Use as: start(); relay_until(deadline); and always stop() in a finally.

    `before_line` runs before each relayed line is written (the heartbeat erases its status line there).
    With `capture`, the child also takes commands: send() writes a line to its stdin, and read_captured()
    waits for an answer line (one that starts with `capture`) while relaying everything else.
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        out: TextIO,
        capture: str | None = None,
        before_line: Callable[[], None] = lambda: None,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.log_path = log_path
        self.relay = _LineRelay(out, capture, before_line)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: BinaryIO | None = None
        self.started_at = 0.0
        self.duration_s = 0.0
        self.timed_out = False
        self.returncode: int | None = None  # negative: killed by that signal (subprocess's convention)
        self.leftover_pids: list[int] = []
        self.stopped = False
        self.eof = False  # the child closed its stdout (normally: it exited)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> None:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        # The child's temporary files go to its own folder: TensorFlow's AutoGraph writes a module per
        # converted function and never removes it, which would leave files in the shared $TMPDIR on every run.
        self.env["TMPDIR"] = str(self.log_path.parent)
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE if self.relay.capture is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=self.env,
            start_new_session=True,  # its own group: one killpg reaches whatever TensorFlow spawned
        )

    def alive(self) -> bool:
        """Started and not exited; checked without reaping it (WNOWAIT), so its group id stays reserved."""
        if self.proc is None or self.stopped or self.eof:
            return False
        with contextlib.suppress(ChildProcessError):
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        return False

    def send(self, line: str) -> bool:
        """One command line to the child's stdin; False when the child can no longer read it."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):  # it died, or its stdin was closed
            return False
        return True

    def read_captured(self, deadline: float) -> str | None:
        """Relay stdout until an answer line arrives (returned), the child closes stdout, or the deadline
        passes (both None; `eof` tells which)."""
        while not self.relay.captured:
            if self.eof or not self._read_some(deadline):
                return None
        return self.relay.captured.popleft()

    def _read_some(self, deadline: float) -> bool:
        """Wait for output until the deadline and relay it; False at the deadline or at EOF."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:  # EOF: the child closed stdout, normally by exiting
                    self.eof = True
                    return False
                self.relay.feed(chunk)
                return True

    def relay_until(self, deadline: float) -> None:
        """Relay stdout until the child exits or the deadline (time.monotonic()) passes."""
        while not self.eof:
            if not self._read_some(deadline) and not self.eof:
                self.timed_out = True
                return
        self.timed_out = not self._exited_by(deadline)

    def _exited_by(self, deadline: float) -> bool:
        """Wait for the child to exit WITHOUT reaping it (WNOWAIT), so its group id stays reserved."""
        assert self.proc is not None
        while True:
            with contextlib.suppress(ChildProcessError):
                if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def stop(self) -> None:
        """Kill the whole group, reap the child, check nothing of ours is left. Idempotent; bounded."""
        if self.stopped:
            return
        self.stopped = True
        proc = self.proc
        try:
            if proc is None:
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=REAP_S)
            self.returncode = proc.returncode
            self.leftover_pids = self._wait_group_gone(proc.pid, time.monotonic() + REAP_S)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            if proc.stdout is not None:
                self._drain(proc.stdout.fileno())
                proc.stdout.close()
            self.relay.close()
            self.duration_s = time.monotonic() - self.started_at
        finally:
            if self._log is not None:
                self._log.close()

    def _drain(self, fd: int) -> None:
        """Whatever the child wrote just before it died is part of "what it printed so far"."""
        for _ in range(64):  # bounded: a survivor that keeps writing must not keep us here
            if not select.select([fd], [], [], 0)[0]:
                return
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            self.relay.feed(chunk)

    @staticmethod
    def _wait_group_gone(pgid: int, deadline: float) -> list[int]:
        while True:
            left = group_members(pgid)
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(POLL_S)
