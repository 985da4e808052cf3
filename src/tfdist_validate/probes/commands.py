"""Run an external command (nvidia-smi, pip, ...) with a deadline; never raises for a missing program."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None  # None: could not start, or killed at the deadline
    stdout: str
    stderr: str
    error: str = ""  # why it did not run or did not finish
    timed_out: bool = False  # killed at the deadline (returncode None); else None means it never started

    @property
    def ok(self) -> bool:
        return self.returncode == 0


CommandRunner = Callable[[Sequence[str], float], CommandResult]


def run_command(argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None) -> CommandResult:
    """env: the child's whole environment; None inherits this process's."""
    args = tuple(argv)
    try:
        # A new session so that a hung tool and whatever it spawned can be killed as one group.
        proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
            env=None if env is None else dict(env),
        )
    except OSError as err:
        return CommandResult(args, None, "", "", f"{args[0]}: {err.strerror or err}")
    try:
        out, err_text = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err_text = proc.communicate()
        return CommandResult(
            args, None, out, err_text, f"{args[0]} did not finish within {timeout_s:g} s", timed_out=True
        )
    return CommandResult(args, proc.returncode, out, err_text)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
