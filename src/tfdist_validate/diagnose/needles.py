"""The literal text every match of a diagnose pattern must contain: the scan's prefilter (diagnose/scan.py).

A line that holds none of a pattern's needles cannot match it, so the regex runs only on the few lines that
hold one. The analysis is deliberately simple and conservative: a pattern it cannot read gives the needle ""
and is refused by signatures.py, never silently skipped.
"""

from __future__ import annotations

import re

_META = set(".^$*+?{}[]()|\\")


def literal_needles(pattern: str) -> tuple[str, ...]:
    """One required literal per top-level branch of `pattern` (every match contains one of them)."""
    return tuple(literal_needle(branch) for branch in _top_level_branches(pattern))


def _top_level_branches(pattern: str) -> list[str]:
    branches, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _skip_group(pattern, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*branches, pattern[start:]]


def literal_needle(pattern: str) -> str:
    """The longest run of plain literal characters that every match of `pattern` must contain.

    Conservative: an alternation at the top level, or anything this scanner does not understand, yields
    "" (no prefilter), which is always correct, only slower.
    """
    if len(_top_level_branches(pattern)) > 1:  # then no single literal is required
        return ""
    runs: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt.isalnum():  # \d \s \b \w ... are classes or anchors, not literals
                runs.append("".join(current))
                current = []
            else:
                current.append(nxt)
            i += 2
        elif ch in "?*{":  # the previous literal is optional or repeated a variable number of times
            if current:
                current.pop()
            runs.append("".join(current))
            current = []
            i = _skip_quantifier(pattern, i)
        elif ch == "+":  # the previous literal is required at least once, then anything may follow
            runs.append("".join(current))
            current = []
            i += 1
        elif ch in "([":
            end = _skip_group(pattern, i)
            quantified = end < len(pattern) and pattern[end] in "?*{"
            inner = _plain_group(pattern[i:end]) if ch == "(" and not quantified else None
            if inner:  # (?P<name>tensorflow-gpu): a named literal reads as the literal itself
                current.extend(inner)
                i = end
                continue
            runs.append("".join(current))
            current = []
            i = end
            if quantified:
                i = _skip_quantifier(pattern, i)
        elif ch in _META:
            runs.append("".join(current))
            current = []
            i += 1
        else:
            current.append(ch)
            i += 1
    runs.append("".join(current))
    return max(runs, key=len).lower()


_GROUP_PREFIX = re.compile(r"\(\?(?::|P<\w+>|-i:)|\(")


def _plain_group(group: str) -> str | None:
    """The text of a group that holds only literal characters, e.g. `(?P<name>tensorflow-gpu)` or
    `(?P<name>(?-i:tensorflow))` (case-sensitive; the scan is not, so the lowered text is its needle)."""
    prefix = _GROUP_PREFIX.match(group)
    inner = group[prefix.end() if prefix else 0 : -1] if group.endswith(")") else ""
    if inner.startswith("(") and _skip_group(inner, 0) == len(inner):
        return _plain_group(inner)
    # a lookaround or any other "(?" group keeps its "?" in `inner`: not plain
    return inner if inner and not any(ch in _META for ch in inner) else None


def _skip_quantifier(pattern: str, start: int) -> int:
    """Index just after the quantifier at `start` (?, *, or {m,n}), and a lazy '?' after it."""
    i = start + 1
    if pattern[start] == "{":
        close = pattern.find("}", start)
        i = close + 1 if close != -1 else len(pattern)
    if i < len(pattern) and pattern[i] == "?":
        i += 1
    return i


def _skip_group(pattern: str, start: int) -> int:
    """Index just after the group or class that opens at `start`."""
    closing = ")" if pattern[start] == "(" else "]"
    depth, i = 0, start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if closing == "]" and ch == "]" and i > start + 1:
            return i + 1
        if closing == ")":
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
        i += 1
    return i
