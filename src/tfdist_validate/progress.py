"""What is running now, for the heartbeat: the check in progress and, inside it, a finer stage.

The main thread sets it (Session.start / record, the smoke test while it relays its child); the heartbeat's
timer thread reads it. A check that blocks for minutes (the smoke child's model.fit relayed by one call)
names its finer stage with `follow`: a function the heartbeat asks each time it looks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    since: float  # on the monotonic clock


class Progress:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._stage: Stage | None = None
        self._follow: Callable[[], str | None] | None = None

    def begin(self, name: str) -> None:
        with self._lock:
            self._stage = Stage(name, self._clock())
            self._follow = None

    def follow(self, finer: Callable[[], str | None]) -> None:
        """Until the check ends, ask `finer` which stage runs now (None: the check's own name)."""
        with self._lock:
            self._follow = finer

    def end(self) -> None:
        with self._lock:
            self._stage = None
            self._follow = None

    def current(self) -> Stage | None:
        """The stage running now; a finer stage that changed starts its own clock."""
        with self._lock:
            stage, finer = self._stage, self._follow
        if stage is None:
            return None
        name = (finer() if finer is not None else None) or stage.name
        with self._lock:
            if self._stage is not stage:  # the check ended while `finer` was asked
                return self._stage
            if name != stage.name:
                self._stage = stage = Stage(name, self._clock())
            return stage
