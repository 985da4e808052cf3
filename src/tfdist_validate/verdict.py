"""The exit code is decided here and nowhere else: the most fundamental failing layer wins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import CheckResult, Status


@dataclass(frozen=True)
class Verdict:
    code: ExitCode
    summary: str
    hint: str
    check_id: str | None  # the check that decided, when one did

    @property
    def name(self) -> str:
        return self.code.name

    def to_json(self) -> dict[str, object]:
        return {
            "code": int(self.code),
            "name": self.name,
            "summary": self.summary,
            "hint": self.hint,
            "check": self.check_id,
        }


def decide(results: Sequence[CheckResult], ok_summary: str = "") -> Verdict:
    failures = [r for r in results if r.status is Status.FAIL]
    if failures:
        # lowest layer first; within a layer, the order the checks ran in
        worst = min(failures, key=lambda r: (r.layer, results.index(r)))
        return Verdict(worst.code, worst.summary, worst.hint, worst.id)
    crashes = [r for r in results if r.status is Status.CRASH]
    if crashes:
        # A crash decides only when nothing more fundamental failed: then the validator itself is at fault.
        first = crashes[0]
        return Verdict(ExitCode.INTERNAL_ERROR, f"{first.id}: {first.summary}", first.hint, first.id)
    warnings = sum(1 for r in results if r.status is Status.WARN)
    passed = sum(1 for r in results if r.status is Status.PASS)
    summary = ok_summary or f"every required check passed ({passed} passed, {warnings} with warnings)"
    return Verdict(ExitCode.OK, summary, "", None)
