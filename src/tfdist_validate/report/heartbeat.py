"""A long stage says that it is alive: on stderr, `smoke.training: still running after 2m10s (deadline 10m;
first start on compute capability 9.0 JIT-compiles kernels)`.

A first start on a Hopper GPU JIT-compiles TensorFlow's kernels for minutes and NCCL's set-up waits for every
worker; without a sign of life an operator reading an init container's log kills a run that was fine. The
main thread is blocked in the stage itself (a driver call, the relay of the smoke child), so the heartbeat is
a timer thread of its own. It writes through HumanReport.status: on a terminal one line updated in place,
in a log a line every `every_s`; never on stdout, and never after the verdict.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tfdist_validate.progress import Progress
from tfdist_validate.report.human import HumanReport

# How long the main thread may take to stop the thread: a beat is a file read and one write.
_JOIN_S = 5.0


@dataclass(frozen=True)
class HeartbeatTiming:
    after_s: float = 5.0  # a stage shorter than this says nothing
    every_s: float = 30.0  # in a log: one line per this many seconds of a stage
    tty_every_s: float = 1.0  # on a terminal: how often the one line is updated

    def period(self, tty: bool) -> float:
        return self.tty_every_s if tty else self.every_s


def show_duration(seconds: float) -> str:
    """2m10s, 45s, 1h02m, 10m: short enough for a status line, exact enough to see progress."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
    return f"{secs}s"


class Heartbeat:
    """Use as a context manager around the checks; `beat()` is one look, callable directly in tests."""

    def __init__(
        self,
        progress: Progress,
        human: HumanReport,
        deadline_s: float,
        why_slow: Callable[[str], str] = lambda _stage: "",
        timing: HeartbeatTiming | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.progress = progress
        self.human = human
        self.deadline_s = deadline_s
        self.why_slow = why_slow
        self.timing = timing or HeartbeatTiming()
        self.clock = clock
        self._period = self.timing.period(human.tty)
        self._last: tuple[str, float] | None = None  # (stage, when) of the last beat written
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tfdist-heartbeat", daemon=True)

    def line(self, stage: str, elapsed: float) -> str:
        note = self.why_slow(stage)
        extra = f"; {note}" if note else ""
        return (
            f"{stage}: still running after {show_duration(elapsed)}"
            f" (deadline {show_duration(self.deadline_s)}{extra})"
        )

    def beat(self) -> str | None:
        """Write a heartbeat if one is due now; returns what was written."""
        stage = self.progress.current()
        if stage is None:
            return None
        now = self.clock()
        elapsed = now - stage.since
        if elapsed < self.timing.after_s:
            return None
        again = self._last is not None and self._last[0] == stage.name
        since = self._last[1] if self._last is not None and again else stage.since
        # On a terminal the line appears once the stage is slow and then updates; in a log the first line
        # comes one period into the stage (30 s), so a log of a healthy run stays short.
        if (again or not self.human.tty) and now - since < self._period:
            return None
        text = self.line(stage.name, elapsed)
        if not self.human.status(text):
            return None
        self._last = (stage.name, now)
        return text

    def _run(self) -> None:
        tick = min(self._period, 1.0)  # look often enough that a finer stage's clock starts on time
        while not self._stop.wait(tick):
            try:
                self.beat()
            except Exception:  # a sign of life must never be the thing that breaks a run
                continue

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(_JOIN_S)
        self.human.clear_status()
