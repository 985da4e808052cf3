"""The human summary on stderr: one line per check as it finishes, a hint under each failure, the verdict.

Checks that were not run because an earlier one failed say nothing new one by one: they are folded into a
single line before the verdict (`-v` lists them). A long stage's heartbeat (report/heartbeat.py) writes
through `status()`, so it and the check lines share one lock and never interleave mid-line.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TextIO

from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import CheckResult, Status
from tfdist_validate.verdict import Verdict

_COLOURS = {
    Status.PASS: "32",  # green
    Status.WARN: "33",  # yellow
    Status.FAIL: "31",  # red
    Status.CRASH: "35",  # magenta
    Status.SKIP: "2",  # dim
}
ID_WIDTH = 28
# "No GPU here" verdicts: the GPU layers cannot run on this machine, but the software path can.
NO_GPU_HERE = frozenset({ExitCode.NO_DRIVER, ExitCode.CONTAINER_NO_GPU, ExitCode.WSL2_PASSTHROUGH})
DRY_RUN_LINE = (
    "  here: `tfdist-validate run --cpu-replicas 2` validates the software path on this machine"
    " (TensorFlow, MirroredStrategy, training on 2 logical CPU devices), not the GPUs, driver or NCCL"
)
_ERASE_LINE = "\r\033[K"  # back to column 0 and clear to the end of the line: how a tty line is updated


def use_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything (https://no-color.org)."""
    if env.get("NO_COLOR"):
        return False
    return is_terminal(stream)


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _did(result: CheckResult) -> str:
    return {Status.FAIL: "failed", Status.CRASH: "crashed"}.get(result.status, result.status.value)


class HumanReport:
    def __init__(self, stream: TextIO, colour: bool, *, verbose: bool = False, tty: bool = False) -> None:
        self.stream = stream
        self.colour = colour
        self.verbose = verbose
        self.tty = tty  # a status line is updated in place instead of printed as a new line
        self._lock = threading.Lock()
        self._seen: dict[str, CheckResult] = {}
        self._folded: list[CheckResult] = []
        self._status_shown = False
        self._closed = False

    def _paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def header(self, tool: str, version: str, command: str, detail: str) -> None:
        self._line(f"{tool} {version}: {command}{' (' + detail + ')' if detail else ''}")

    def check(self, result: CheckResult) -> None:
        self._seen[result.id] = result
        if result.blocked_by is not None and not self.verbose:
            self._folded.append(result)
            return
        self._check_line(result.status, result.id, result.summary)
        if result.hint and result.status in (Status.FAIL, Status.CRASH, Status.WARN):
            self._line(f"        hint: {result.hint}")

    def _check_line(self, status: Status, label: str, summary: str) -> None:
        word = self._paint(f"{status.value.upper():<5}", _COLOURS[status])
        self._line(f"  {word} {label:<{ID_WIDTH}} {summary}")

    def _root_cause(self, result: CheckResult) -> CheckResult:
        """Follow "not run because of X" down to the check that actually failed or crashed."""
        while result.blocked_by is not None and result.blocked_by in self._seen:
            result = self._seen[result.blocked_by]
        return result

    def _fold(self) -> None:
        if not self._folded:
            return
        roots = {r.id: r for r in (self._root_cause(f) for f in self._folded)}
        causes = " and ".join(f"{root.id} {_did(root)}" for root in roots.values())
        count = len(self._folded)
        label = f"{count} check{'s' if count > 1 else ''}"
        self._check_line(Status.SKIP, label, f"not run because {causes} (-v lists them)")
        self._folded = []

    def verdict(self, verdict: Verdict, report_path: str | None) -> None:
        self._fold()
        colour = "32" if verdict.code == 0 else "31"
        head = self._paint(f"verdict: {int(verdict.code)} {verdict.name}", colour)
        self._line(f"{head}: {verdict.summary}")
        if verdict.hint:
            self._line(f"  fix: {verdict.hint}")
        if verdict.code in NO_GPU_HERE:
            self._line(DRY_RUN_LINE)
        if report_path and report_path != "-":
            self._line(f"  report: {report_path}")
        with self._lock:
            self._closed = True  # a heartbeat that wakes up now must not write after the verdict

    def note(self, text: str) -> None:
        self._line(f"  note: {text}")

    def status(self, text: str) -> bool:
        """A heartbeat: on a terminal one line updated in place, in a log a line of its own. False after
        the verdict, when nothing more may be written."""
        with self._lock:
            if self._closed:
                return False
            if self.tty:
                self._write(f"{_ERASE_LINE}{text}")
                self._status_shown = True
            else:
                self._write(text + "\n")
            return True

    def clear_status(self) -> None:
        """Erase the heartbeat's line, so that whatever is printed next starts on a clean line."""
        with self._lock:
            self._clear_status()

    def _clear_status(self) -> None:
        if self._status_shown:
            self._write(_ERASE_LINE)
            self._status_shown = False

    def _line(self, text: str) -> None:
        with self._lock:
            self._clear_status()
            self._write(text + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
