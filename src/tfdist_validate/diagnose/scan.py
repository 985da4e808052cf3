"""Find the few lines of a big log block that could match any signature: the only home of RE2 here.

Every pattern has literal needles (needles.literal_needles), one of which is in every line it matches. So a
line without any needle cannot match anything, and only the lines around a needle hit need the full matcher.
Measured on 100 MB of training output (benchmarks/bench.py --diagnose): one RE2 alternation of ~200 needles
scans it in 0.2 s; Python's `re` takes 29 s for the same alternation, testing each needle with `in` takes 4 s,
pyahocorasick 0.9 s. Without a google-re2 wheel the per-line `in` test is used: slower, same answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

try:  # google-re2 ships wheels for x86_64 and arm64 (Linux, macOS, Windows); elsewhere the slow path serves
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the platform's wheels
    _re2 = None


class NeedleScanner:
    """Spans of the lines of a block (bytes, whole lines) holding at least one needle, case-insensitively."""

    def __init__(self, needles: Iterable[str]) -> None:
        self.needles = tuple(sorted({n.lower().encode() for n in needles if n}))
        self._regex: Any = None
        if _re2 is not None and self.needles:
            options = _re2.Options()
            options.case_sensitive = False
            options.max_mem = 64 << 20  # the DFA for a few hundred literals needs a few MB
            self._regex = _re2.compile(b"|".join(_re2.escape(n) for n in self.needles), options)

    @property
    def fast(self) -> bool:
        return self._regex is not None

    def line_spans(self, block: bytes) -> Iterator[tuple[int, int]]:
        """(start, end) of each line holding a needle; end excludes the newline. Lines come in order, once."""
        if self._regex is None:
            yield from self._slow_spans(block)
            return
        pos = 0
        size = len(block)
        while pos < size:
            match = self._regex.search(block, pos)
            if match is None:
                return
            start = block.rfind(b"\n", 0, match.start()) + 1
            end = block.find(b"\n", match.end())
            if end == -1:
                end = size
            yield start, end
            pos = end + 1

    def _slow_spans(self, block: bytes) -> Iterator[tuple[int, int]]:
        # Each needle's occurrences by bytes.find (C speed): ~30x slower than one RE2 pass, 10x faster than
        # testing every line in Python.
        lowered = block.lower()
        spans = set()
        for needle in self.needles:
            at = lowered.find(needle)
            while at != -1:
                start = lowered.rfind(b"\n", 0, at) + 1
                end = lowered.find(b"\n", at)
                end = len(lowered) if end == -1 else end
                spans.add((start, end))
                at = lowered.find(needle, end)
        yield from sorted(spans)
