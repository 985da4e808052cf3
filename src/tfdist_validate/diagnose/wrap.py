"""A printed line that reached the thread wrapped in two: the two halves as the one line the program printed.

A terminal copy (or a console, or an e-mail) breaks a long line at the window's width, so a message arrives
as two lines and a pattern written for the whole line matches neither half ("... the required runtime is
not" / "configured"). The engine (engine.py) hands every line it matched to a `Rejoiner`, which joins a line
with its neighbour only where one of the two held a pattern's needle but matched no signature: ordinary
training output holds no needle, so it is never joined and the scan keeps its speed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

# The first half of a wrapped line fills the window: terminals are 80 columns or wider, and a few columns may
# be lost where the copy dropped indentation or a trailing blank. A shorter line ended where its program did.
MIN_FIRST_HALF = 60
# Longer halves are not joined: a wrapped message is a few hundred characters, a line of thousands is data.
MAX_JOINED = 4096

# What the engine's `match` gives for each entry a text matches: (entry, where its match starts, groups).
Hit = tuple[Any, int, dict[str, str | None]]


def may_be_first_half(text: str) -> bool:
    """True when `text` is long enough to be the first half of a line a terminal wrapped."""
    return len(text.rstrip()) >= MIN_FIRST_HALF


def joined(first: str, second: str) -> tuple[str, ...]:
    """The ways `first` and `second` may have been one line: cut inside a word (nothing lost), or at a blank
    that the break swallowed (a trailing blank is stripped, a leading one dropped with the indentation). Empty
    when `first` is too short to be a wrapped line's first half or `second` holds nothing."""
    first, second = first.rstrip(), second.strip()
    if not may_be_first_half(first) or not second or len(first) + len(second) > MAX_JOINED:
        return ()
    return first + second, f"{first} {second}"


class Rejoiner:
    """Follows the lines the engine matches, in order, and says which pairs to match again as one line.
    `clean`: how the engine cleans a raw line before matching it (applied to a line the caller skipped)."""

    def __init__(self, clean: Callable[[str], str]) -> None:
        self._clean = clean
        self._first: tuple[int, str] | None = None  # an unread line waiting for the line after it
        self._last: tuple[int, str] | None = None  # the line matched last, as the one above the next

    @property
    def waiting(self) -> bool:
        """True while a line waits for the one after it: the reader must feed that one too."""
        return self._first is not None

    def see(
        self,
        number: int,
        text: str,
        above: bytes | None,
        unread: bool,
        match: Callable[[str], list[Hit]],
    ) -> Iterator[tuple[int, str, list[Hit]]]:
        """(number of the first half, the joined line, `match`'s hits in it) for the joins worth recording.
        `unread`: the line held a needle but matched no signature; `above`: the line before it, when the
        caller skipped it (else the last line seen here, if that was the one before)."""
        first, self._first = self._first, None
        if first is not None and first[0] == number - 1:
            yield from _hits(first[0], first[1], text, match)
        elif unread:
            before = None if above is None else self._clean(above.decode("utf-8", errors="replace"))
            if before is None and self._last is not None and self._last[0] == number - 1:
                before = self._last[1]
            if before is not None:
                yield from _hits(number - 1, before, text, match)
        if unread and may_be_first_half(text):
            self._first = (number, text)
        self._last = (number, text)


def _hits(
    number: int, first: str, second: str, match: Callable[[str], list[Hit]]
) -> Iterator[tuple[int, str, list[Hit]]]:
    """The first way of joining the halves that `match` finds anything in (both ways would count it twice).
    Only an entry that the first half alone does not match, matched from inside the first half, counts: the
    rest is each line's own, read where it stands (a line matched in full and the next line, joined, would
    otherwise cite the same message twice, the second time with the next line glued on)."""
    cut = len(first.rstrip())
    for whole in joined(first, second):
        hits = match(whole)
        if hits:
            own = {id(hit[0]) for hit in match(first)}
            crossing = [hit for hit in hits if hit[1] < cut and id(hit[0]) not in own]
            if crossing:
                yield number, whole, crossing
            return
