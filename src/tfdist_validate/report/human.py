"""The human summary on stderr: one line per check as it finishes, a hint under each failure, the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

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


def use_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything (https://no-color.org)."""
    if env.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class HumanReport:
    def __init__(self, stream: TextIO, colour: bool) -> None:
        self.stream = stream
        self.colour = colour

    def _paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def header(self, tool: str, version: str, command: str, detail: str) -> None:
        self._line(f"{tool} {version}: {command}{' (' + detail + ')' if detail else ''}")

    def check(self, result: CheckResult) -> None:
        word = self._paint(f"{result.status.value.upper():<5}", _COLOURS[result.status])
        self._line(f"  {word} {result.id:<{ID_WIDTH}} {result.summary}")
        if result.hint and result.status in (Status.FAIL, Status.CRASH, Status.WARN):
            self._line(f"        hint: {result.hint}")

    def verdict(self, verdict: Verdict, report_path: str | None) -> None:
        colour = "32" if verdict.code == 0 else "31"
        head = self._paint(f"verdict: {int(verdict.code)} {verdict.name}", colour)
        self._line(f"{head}: {verdict.summary}")
        if verdict.hint:
            self._line(f"  fix: {verdict.hint}")
        if report_path and report_path != "-":
            self._line(f"  report: {report_path}")

    def note(self, text: str) -> None:
        self._line(f"  note: {text}")

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
