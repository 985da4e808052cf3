"""Printed lines as they reach a thread: a long line a terminal (or a console's copy) wrapped in two is read
as the one line the program printed (diagnose/wrap.py and the engine's joining of neighbours)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tfdist_validate.diagnose import diagnose, diagnose_file, load, wrap
from tfdist_validate.diagnose.engine import Matcher

LOGS = Path(__file__).parent / "fixtures" / "logs"
TABLE = load()
ENTRIES: list[dict[str, Any]] = yaml.safe_load((LOGS / "real_lines.yaml").read_text(encoding="utf-8"))
# Failure lines a wrap can break: each copied from a public thread (real_lines.yaml names it). Signatures that
# want a second line (`then`) or read the user's words (prose) are left out: a wrap is about one printed line.
_FAILURES = [
    e
    for e in ENTRIES
    if TABLE.by_id(e["signature"]).severity == "error"
    and not TABLE.by_id(e["signature"]).then
    and not TABLE.by_id(e["signature"]).prose
]
# A progress line of the same width as a wrapped half, holding no needle: ordinary training output.
_PROGRESS = "312/469 [===================>..........] - ETA: 41s - loss: 0.4172 - accuracy: 0.8731"


def _wrapped(line: str, width: int) -> str:
    return line[:width] + "\n" + line[width:]


def _long(width: int) -> list[dict[str, Any]]:
    return [e for e in _FAILURES if len(e["line"]) > width + 5]


@pytest.mark.parametrize("width", [80, 100, 120])
def test_real_failure_lines_wrapped_at_a_terminal_width_are_still_read(width: int) -> None:
    """Without joining, a third of these lines was not recognised at 80 columns (90 of 249), a quarter at 120
    (51 of 178). A few stay lost: where the break splits the only literal the scan looks for, neither half is
    read at all. (The code may still differ where a whole-log reasoner needs the figures the break split, as
    PyTorch's out-of-memory numbers for memory_held.py.)"""
    cases = _long(width)
    lost = []
    for entry in cases:
        log = (entry.get("context", "") + "\n" + _wrapped(entry["line"], width)).strip("\n")
        if entry["signature"] not in {f.signature.id for f in diagnose(log).findings}:
            lost.append(entry["signature"])
    assert len(cases) > 100
    assert len(lost) <= len(cases) // 25, lost


def test_a_file_is_read_the_same_as_a_text(tmp_path: Path) -> None:
    """The streamed reader scans only lines holding a needle; the half before such a line is handed to the
    matcher from the block, so a wrapped line reads the same from a file as from a text."""
    parts = []
    for entry in _long(80):
        parts += [_PROGRESS, _wrapped(entry["line"], 80), _PROGRESS, _PROGRESS]
    text = "\n".join(parts) + "\n"
    path = tmp_path / "wrapped.log"
    path.write_text(text, encoding="utf-8")
    from_text = {(f.signature.id, f.count) for f in diagnose(text).findings}
    from_file = {(f.signature.id, f.count) for f in diagnose_file(path).findings}
    assert from_file == from_text


@pytest.mark.parametrize("blank", [False, True])
def test_a_message_wrapped_at_80_columns_is_read_as_one(blank: bool) -> None:
    """nvidia-docker#1410's daemon error (real_lines.yaml) wrapped at 80 columns, inside a word or at the
    blank before it (the break swallows it: a trailing blank is stripped, a leading one dropped as indent)."""
    line = 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'
    cut = line.rindex(" ", 0, 80) if blank else 80
    first, second = line[:cut], line[cut:].lstrip()
    result = diagnose(f"{_PROGRESS}\n{first}\n{second}\n{_PROGRESS}")
    assert "docker-no-gpu-driver" in {f.signature.id for f in result.findings}
    assert int(result.code) == 11


def test_short_lines_are_never_joined() -> None:
    """A line shorter than a terminal's width ended where its program ended it: two short lines that only
    together would spell a message are two messages."""
    assert wrap.joined("could not select device", "driver with capabilities: [[gpu]]") == ()
    result = diagnose("docker: could not select device\ndriver with capabilities: [[gpu]]")
    assert "docker-no-gpu-driver" not in {f.signature.id for f in result.findings}


def test_ordinary_output_after_an_unread_line_is_not_chained() -> None:
    """Only a line holding a needle can ask for the next one: the progress lines after it (long, but holding
    no needle) do not each ask for their successor, so a big log is not read line by line."""
    matcher = Matcher()
    # long, holding a needle (docker's "Error response from daemon") and matching no signature
    matcher.feed(
        1, 'docker: Error response from daemon: Conflict. The container name "/train" is already in use.'
    )
    assert matcher.wants_next
    matcher.feed(2, _PROGRESS)
    assert not matcher.wants_next
    matcher.feed(3, _PROGRESS)
    assert not matcher.wants_next


def test_harmless_lines_side_by_side_stay_harmless() -> None:
    """Joining neighbours must not make a failure out of two harmless lines."""
    harmless = [
        e["line"] for e in ENTRIES if TABLE.by_id(e["signature"]).severity != "error" and e["code"] == 0
    ]
    for order in (harmless, harmless[::-1], harmless[1::2] + harmless[::2]):
        assert diagnose("\n".join(order)).failures == []


def test_a_line_read_where_it_stands_is_not_cited_again_glued_to_the_next() -> None:
    """A failure line read in full, followed by a line that holds a needle but no failure (compose's
    "Attaching to app-1", which is container evidence), is no wrapped line: the pair joined must not be cited
    as a second line of the same finding ("... load CUDAAttaching to app-1" was, before wrap.py kept only
    the entries the first half alone does not match)."""
    glued = []
    for entry in _FAILURES:
        if not wrap.may_be_first_half(entry["line"]):
            continue
        log = (entry.get("context", "") + "\n" + entry["line"] + "\nAttaching to app-1").strip("\n")
        cited = [line.text for f in diagnose(log).findings for line in f.lines]
        glued += [text for text in cited if "Attaching to app-1" in text]
    assert glued == []
