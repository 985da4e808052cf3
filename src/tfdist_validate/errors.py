"""Errors that end the program with a one-line message instead of a traceback."""

from __future__ import annotations

import signal


class UsageError(Exception):
    """Bad arguments, config file or environment value: exit 2 with one line naming where and what."""


class Terminated(BaseException):
    """SIGTERM (the kubelet deleting the pod), SIGINT or SIGHUP: stop, clean up children, write the report.

    A BaseException so that no check's `except Exception` swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
