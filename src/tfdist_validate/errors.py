"""Errors that end the program with a one-line message instead of a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments, config file or environment value: exit 2 with one line naming where and what."""
