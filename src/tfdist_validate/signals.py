"""The stop signals (SIGTERM from the kubelet, Ctrl-C, SIGHUP from a closed terminal) and the two ways the
program treats them: raised as Terminated where work can be stopped, held while cleanup must not be cut short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from tfdist_validate.errors import Terminated

# The signals that stop a run before its verdict (contract: exit 50 with the report): the kubelet's SIGTERM,
# Ctrl-C, and SIGHUP from a closed terminal or ssh session.
TERMINATING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@contextlib.contextmanager
def signals_deferred(redeliver: bool = True) -> Iterator[None]:
    """Hold the stop signals while cleaning up, so a second Ctrl-C cannot cut the kill-and-record short.

    Done with Python-level handlers, not the thread's signal mask: the kernel would deliver a process-wide
    signal to another thread (the whole-run watchdog's timer), and Python runs handlers in the main thread
    anyway. A signal that arrives meanwhile is raised again on exit, to the handler app.py installed, unless
    `redeliver` is False (the run's verdict is out and the process is ending: the signal has nothing to stop).
    """
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    pending: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: pending.append(signum)) for sig in TERMINATING}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(pending) if redeliver else ():
            signal.raise_signal(signum)


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """A stop signal raises Terminated in the main thread (the contract: exit 50 with the report, never the
    shell's 143). Elsewhere a no-op: only the main thread may set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in TERMINATING}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
