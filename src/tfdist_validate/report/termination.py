"""The Kubernetes termination message: one paragraph, at most 4096 bytes, never a reason for the run to fail.

The kubelet bind-mounts /dev/termination-log as a single file: renaming a temp file over a mount point fails
with EBUSY, so report/files.py writes such a file in place.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tfdist_validate.report.files import WriteError, shown, write_output
from tfdist_validate.result import CheckResult, Status
from tfdist_validate.verdict import Verdict

DEFAULT_PATH = "/dev/termination-log"
LIMIT_BYTES = 4096  # the kubelet truncates longer messages


def default_path() -> str | None:
    return DEFAULT_PATH if os.path.exists(DEFAULT_PATH) and os.access(DEFAULT_PATH, os.W_OK) else None


def compose(verdict: Verdict, results: Sequence[CheckResult], report_path: str | None) -> str:
    parts = [_sentence(f"tfdist-validate: exit {int(verdict.code)} {verdict.name}: {verdict.summary}")]
    if verdict.hint:
        parts.append(_sentence(f"Fix: {verdict.hint}"))
    problems = [r.id for r in results if r.status in (Status.FAIL, Status.CRASH)]
    warnings = [r.id for r in results if r.status is Status.WARN]
    if problems:
        parts.append(f"Failed: {', '.join(problems)}.")
    if warnings:
        parts.append(f"Warnings: {', '.join(warnings)}.")
    if report_path and report_path != "-":
        parts.append(f"Report: {report_path}.")
    return truncate_utf8(" ".join(parts), LIMIT_BYTES)


def _sentence(text: str) -> str:
    return text.rstrip(". ") + "."


def truncate_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", errors="ignore") + "..."


def write(path: str, message: str, deadline: float | None = None) -> str | None:
    """Returns why it could not be written, or None. A bind-mounted file is written in place (files.py)."""
    try:
        write_output(path, message, deadline)
    except WriteError as err:
        return f"could not write the termination message to {shown(path)}: {err.strerror}"
    return None
