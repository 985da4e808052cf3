"""The kernel log's Xid / SXid history, reported in the health layer's `health.gpus` result.

It is a section of that check rather than a check of its own: a new check id would change the check list of
every report recorded before it (the host matrix replays them), and the verdict it adds is the health
layer's own. Events are a warning; fatal ones (host/kmsg.py's catalogue) fail with --fail-on-health (31).
Where the log cannot be read that is said once, in the details; older reports that did not record it are
judged as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.kmsg import KernelLog
from tfdist_validate.result import Outcome, Status, failed, warned
from tfdist_validate.runner import Check

HEALTH_CHECK = "health.gpus"
HINT = (
    "look each Xid / SXid up in NVIDIA's catalogue (https://docs.nvidia.com/deploy/xid-errors/index.html);"
    " `sudo dmesg -T | grep -e Xid -e SXid` shows them with their times; reset or reboot after fatal ones,"
    " and have a GPU that repeats 48 / 64 / 79 / 95 serviced"
)


def with_kernel_log(checks: Sequence[Check]) -> list[Check]:
    """The health layer's checks, `health.gpus` also judging the kernel log's Xid / SXid history."""
    return [replace(c, run=_judged(c.run)) if c.id == HEALTH_CHECK else c for c in checks]


def _judged(inner: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
    def run(ctx: Context) -> Outcome:
        outcome = inner(ctx)
        log = ctx.facts.runtime.kernel_log if ctx.facts.runtime is not None else None
        return outcome if log is None else judge(outcome, log, ctx.settings.fail_on_health)

    return run


def judge(outcome: Outcome, log: KernelLog, fail_on_health: bool) -> Outcome:
    details: dict[str, Any] = {**outcome.details, "kernel_log": log.note}
    if not log.events:
        if log.readable:
            details["kernel_log"] = f"{log.note}; no Xid or SXid since boot"
        return replace(outcome, details=details)
    details["xid_events"] = [
        {
            "kind": e.kind,
            "xid": e.number,
            "device": e.device,
            "meaning": e.meaning,
            "fatal": e.fatal,
            "line": e.line,
        }
        for e in log.events
    ]
    said = describe(log)
    summary = f"{outcome.summary}; {said}"
    if outcome.status in (Status.FAIL, Status.CRASH):
        return replace(outcome, summary=summary, details=details)
    hint = f"{outcome.hint}; {HINT}" if outcome.hint else HINT
    if fail_on_health and any(e.fatal for e in log.events):
        return failed(ExitCode.GPU_UNHEALTHY, summary, hint, details)
    return warned(summary, hint, details)


def describe(log: KernelLog) -> str:
    counts = Counter((e.kind, e.number, e.meaning, e.fatal) for e in log.events)
    parts = [
        f"{kind} {number} ({meaning}{', fatal' if fatal else ''}) x{n}"
        for (kind, number, meaning, fatal), n in sorted(counts.items(), key=lambda i: (i[0][0], i[0][1]))
    ]
    more = f" ({log.count} in all, {len(log.events)} kept)" if log.count > len(log.events) else ""
    return f"kernel log since boot: {', '.join(parts)}{more}"
