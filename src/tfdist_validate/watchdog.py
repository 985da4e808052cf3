"""The last line of defence against a hang in the validator's own process.

Child processes have their own deadlines; this timer fires only if the main thread is stuck past the
whole-run deadline (a driver call that never returns, say). It then writes what is known and exits 50 with
os._exit, because a thread blocked in C cannot be interrupted any other way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# Extra time after the deadline before the hard exit: lets a child process's own deadline fire first,
# so the normal path (with a full report) wins whenever it can.
GRACE_S = 5.0


class Watchdog:
    def __init__(self, seconds: float, on_fire: Callable[[], None]) -> None:
        self._timer = threading.Timer(seconds + GRACE_S, on_fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
