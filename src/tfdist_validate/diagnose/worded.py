"""Which of a log's last lines the layer words (layer_words.py) may read, when the table found no failure.

A line is left to the table when an entry explains it, when it is half of a warning or harmless notice that a
terminal wrapped (read joined with the line before or after, as wrap.py reads them), or when it goes on such a
notice's sentence. XLA's warning that the driver is older than ptxas goes on with "Because the driver is older
than th", and TF-TRT's harmless "Could not load dynamic library 'libnvinfer.so.7'" is often cut in two: read
alone, either would name a layer. Not every entry explains a line: a context's evidence says only where the
log came from (a Windows path, an ELF library's name: cryoSPARC's and dlib's out-of-memory lines hold both),
and some of the capability reasoner's facts only gather evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tfdist_validate.diagnose import capability
from tfdist_validate.diagnose.findings import Line
from tfdist_validate.diagnose.signatures import Evidence, Signature

# a line that ends its sentence (or a line of its own): the next one does not continue it
SENTENCE_END = re.compile(r"[.!?:;)\]]\s*$")
# What a line holds for the capability reasoner that says nothing of what the line means: a GPU's name, a CUDA
# version, a sign of trouble ("out of memory"). A failure line often holds one of them.
_GATHERED_ONLY = frozenset({"gpu", "cuda", "trouble"})


def explains(item: object) -> bool:
    """Whether a table entry a line matches says what the line means, so that its words need no other
    reading."""
    if isinstance(item, Evidence):
        return False
    return not (isinstance(item, capability.Fact) and item.kind in _GATHERED_ONLY)


def split_tail(
    lines: Sequence[Line],
    noted: set[int],
    entries_of: Callable[[str], list[object]],
    notice_in: Callable[[str], bool],
    new_record: re.Pattern[str],
) -> tuple[list[Line], list[Line]]:
    """The lines no table entry matches (for unrecognised.py), and the lines the layer words may read.
    `noted`: the numbers of the lines that warnings and harmless findings cite; `entries_of(text)`: the table
    entries a line matches; `notice_in(text)`: whether a joined pair of lines is a warning or harmless notice;
    `new_record`: a timestamp or log prefix, which starts a record of its own."""
    unclaimed, worded, continuing = [], [], False
    joined: dict[int, bool] = {}  # pair j (lines j and j + 1) -> a notice; each pair is judged once

    def half_of_a_notice(i: int) -> bool:
        for j in (i - 1, i):
            if 0 <= j < len(lines) - 1:
                if j not in joined:
                    joined[j] = notice_in(lines[j].text + lines[j + 1].text)
                if joined[j]:
                    return True
        return False

    for i, line in enumerate(lines):
        matched = entries_of(line.text)
        explained = any(explains(m) for m in matched)
        notice = line.number in noted or any(
            isinstance(m, Signature) and m.severity == "info" for m in matched
        )
        if not matched:
            unclaimed.append(line)
        # a line starting a log record of its own goes on no one's sentence
        continuing = continuing and not new_record.search(line.text)
        if not (explained or notice or continuing or half_of_a_notice(i)):
            worded.append(line)
        # a notice's sentence goes on until a line ends one; any other explained line ends it
        continuing = (notice or (continuing and not explained)) and not SENTENCE_END.search(line.text)
    return unclaimed, worded
