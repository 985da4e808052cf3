"""A printed line that reached the thread wrapped in two: the two halves as the one line the program printed.

A terminal copy (or a console, or an e-mail) breaks a long line at the window's width, so a message arrives
as two lines and a pattern written for the whole line matches neither half ("... the required runtime is
not" / "configured"). The engine (engine.py) asks for the halves only around a line that holds a pattern's
needle but matched no signature, so ordinary training output never gets here and the scan keeps its speed.
"""

from __future__ import annotations

# The first half of a wrapped line fills the window: terminals are 80 columns or wider, and a few columns may
# be lost where the copy dropped indentation or a trailing blank. A shorter line ended where its program did.
MIN_FIRST_HALF = 60
# Longer halves are not joined: a wrapped message is a few hundred characters, a line of thousands is data.
MAX_JOINED = 4096


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
