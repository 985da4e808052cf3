"""The lines near a log's end that look like a failure no signature knows.

"No known failure" is not "no failure": a job that died of something the table has never seen still ends in
a traceback or an error line, and an operator who reads only the verdict must not take that log for a healthy
one. So when nothing failed, the report quotes the last few failure-looking lines of the log's tail that no
table entry matched. Only the tail is read (a job dies at its end; a verbose log's middle is full of retried,
harmless errors), and only after the scan, so the one pass over a big log costs nothing more: the stream
keeps a reference to its last two blocks, the line API a bounded window of lines. The exit code does not
change: it names known causes only (CONTRACT.md: 0 when none is found).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

from tfdist_validate.diagnose.findings import Line

TAIL_LINES = 200  # how far back from the end the failure-looking lines are looked for
TAIL_BYTES = 64 << 10  # the same window for a streamed log, in bytes: a long line counts once
SHOWN = 5  # the last few are enough to start from; the rest of the log is the user's to read
_FAILURE = re.compile(
    # "RuntimeError", "ResourceExhaustedError": an exception class names itself (no \w* before it: on a
    # long run of word characters that would backtrack quadratically)
    r"(?:error|exception)\b|"
    r"\b(?:errors|fail|failed|failure|fatal|traceback|abort|aborted|panic"
    r"|segmentation fault|core dumped|killed|cannot|can't|could not|couldn't|unable to|not found"
    r"|no such file|illegal instruction|timed out|timeout|hangs?|stuck|not available|no gpu|not supported)\b",
    re.IGNORECASE,
)


class LineTail:
    """The last TAIL_LINES lines given to the line API (`diagnose(text)`), bounded."""

    def __init__(self) -> None:
        self._lines: deque[Line] = deque(maxlen=TAIL_LINES)

    def add(self, number: int, text: str) -> None:
        self._lines.append(Line(number, text))

    def lines(self) -> list[Line]:
        return list(self._lines)


class BlockTail:
    """The end of a streamed log: references to its last two blocks (a block is whole lines, reader.blocks)
    and the number of its last line, turned into numbered lines only once the stream is done."""

    def __init__(self) -> None:
        self._blocks: tuple[bytes, ...] = ()
        self._last_number = 0

    def add(self, block: bytes, last_number: int) -> None:
        self._blocks = (*self._blocks[-1:], block)
        self._last_number = last_number

    def lines(self) -> list[Line]:
        joined = b"".join(self._blocks)
        window = joined[-TAIL_BYTES:]
        pieces = window.split(b"\n")
        if pieces and pieces[-1] == b"":
            pieces.pop()  # the newline that ends the last line starts no line of its own
        # the first piece may be the end of a line the window cut: still that line's text (a giant last line
        # is only ever seen this way), numbered like the others, from the end
        first = self._last_number - len(pieces) + 1
        texts = (piece.decode("utf-8", errors="replace") for piece in pieces)
        return [Line(first + i, text) for i, text in enumerate(texts)][-TAIL_LINES:]


def failure_looking(unclaimed: Iterable[Line]) -> list[tuple[int, str, int]]:
    """(number, text, where its failure word is) for the last SHOWN lines of `unclaimed` that read like a
    failure. The caller passes only lines no table entry (a harmless notice, a context, a fact) matches:
    worded.split_tail has already set the claimed ones apart."""
    found = []
    for line in unclaimed:
        word = _FAILURE.search(line.text)
        if word is not None:
            found.append((line.number, line.text, word.start()))
    return found[-SHOWN:]
