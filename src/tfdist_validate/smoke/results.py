"""Read the child's structured results: one JSON object per line, `{"stage": ..., ...}`.

A child killed at the deadline may leave a half-written last line; it is ignored and counted, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdist_validate.smoke.spec import STAGES


@dataclass(frozen=True)
class ChildResults:
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: dict[str, Any] | None = None  # the child's report of an unexpected exception
    done: bool = False  # the child finished everything it meant to run
    unreadable_lines: int = 0

    def get(self, stage: str) -> dict[str, Any] | None:
        return self.stages.get(stage)

    def in_progress(self) -> str | None:
        """The stage the child was working on when it stopped: the first without a result."""
        if self.done:
            return None
        if self.error is not None and self.error.get("during") in STAGES:
            return str(self.error["during"])
        return next((s for s in STAGES if s not in self.stages), None)


def parse(text: str) -> ChildResults:
    stages: dict[str, dict[str, Any]] = {}
    error: dict[str, Any] | None = None
    done = False
    unreadable = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            unreadable += 1
            continue
        if not isinstance(record, dict) or not isinstance(record.get("stage"), str):
            unreadable += 1
            continue
        stage = record.pop("stage")
        if stage == "done":
            done = True
        elif stage == "error":
            error = record
        elif stage in STAGES:
            stages[stage] = record
        else:
            unreadable += 1
    return ChildResults(stages, error, done, unreadable)


def read(path: Path) -> ChildResults:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:  # the child died before its first result
        return ChildResults()
    return parse(text)
