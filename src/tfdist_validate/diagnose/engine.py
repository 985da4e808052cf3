"""Match a log against the signature table, line by line, in bounded memory.

One pass over blocks of the file: scan.py finds the lines that hold one of the patterns' literal needles (most
lines of a training log hold none and are never decoded), and only those are tested against every signature,
against the evidence patterns that say where the log came from, and against the lines that give TensorFlow's
version away. Only the first few lines of each finding are kept, so a gigabyte of log costs time, not memory.
Context- and version-dependent codes are resolved at the end, when all the evidence is in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tfdist_validate.diagnose import (
    capability,
    gpu_request,
    layer_words,
    prose,
    reasoners,
    resemblance,
    resolve,
    unrecognised,
    worded as worded_lines,
    wrap,
)
from tfdist_validate.diagnose.findings import Diagnosis, Finding, Line
from tfdist_validate.diagnose.reader import CHUNK, blocks
from tfdist_validate.diagnose.reasoners import Reasoners
from tfdist_validate.diagnose.scan import NeedleScanner
from tfdist_validate.diagnose.signatures import CONTEXTS, Evidence, Fact, Signature, Table, Version, load
from tfdist_validate.errors import UsageError
from tfdist_validate.exitcodes import ExitCode

MAX_LINES_KEPT = 3  # example lines kept per finding
MAX_MATCH_CHARS = CHUNK  # longer lines are matched as several pieces with the same number
THEN_LOOKAHEAD = 3  # a `then` pattern must match within this many non-blank lines after its first line
MAX_SHOWN_CHARS = 240
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# a markdown task-list item left unticked: the options of an issue template the user did not choose
_UNTICKED = re.compile(r"[-*+] \[ \] ")
# The timestamp TensorFlow / absl put first on each line: lines differing only by it match the same entries,
# so what the rest of such a line matched is remembered (verbose logs repeat some notices thousands of times).
_STAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.,]\d+:? |[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")
MAX_CACHED = 4096
# what a line is tested against: the table's entries and the whole-log reasoners' facts
_Item = Signature | Evidence | Version | Fact | capability.Fact  # every reasoner's fact is a capability.Fact


@dataclass
class _Hits:
    lines: list[Line] = field(default_factory=list)
    count: int = 0

    def add(self, line: Line) -> None:
        self.count += 1
        if len(self.lines) < MAX_LINES_KEPT:
            self.lines.append(line)


def clean(text: str) -> str:
    """A log line as a reader sees it: no colour codes, no trailing blanks, progress-bar rewrites kept
    as spaces so a pattern cannot straddle them by accident."""
    return _ANSI.sub("", text).replace("\r", " ").replace("\x08", "").rstrip()


def _shown(text: str, at: int) -> str:
    """The line as shown in the report: whole when short, else a window around the match at `at`."""
    if len(text.strip()) <= MAX_SHOWN_CHARS:
        return text.strip()
    start = max(0, min(at - MAX_SHOWN_CHARS // 4, len(text) - MAX_SHOWN_CHARS + 2))
    window = text[start : start + MAX_SHOWN_CHARS - 2].strip()
    return ("…" if start > 0 else "") + window + ("…" if start + MAX_SHOWN_CHARS - 2 < len(text) else "")


# The smoke test's child writes this line (our own, not learnt from a public log) when it hides the GPUs for
# a --cpu-replicas dry run. There, TensorFlow's complaints about a missing driver or GPU are expected.
DRY_RUN_MARKER = "tfdist-validate smoke test: CPU dry run"
DRY_RUN_CONTEXT = "cpu-dry-run"
_GPU_CODES = frozenset(
    {
        ExitCode.NO_DRIVER,
        ExitCode.CONTAINER_NO_GPU,
        ExitCode.WSL2_PASSTHROUGH,
        ExitCode.DRIVER_TOO_OLD,
        ExitCode.FABRIC_NOT_READY,
        ExitCode.TF_NO_GPU,
        ExitCode.UNSUPPORTED_GPU,
        ExitCode.GPU_UNHEALTHY,
    }
)


@dataclass
class _Pending:
    """A first line was seen whose signature or version entry wants its `then` on a following line."""

    item: Signature | Version
    first: Line
    left: int = THEN_LOOKAHEAD


class Matcher:
    """Feed a stream with `feed_stream` (or lines with `feed`); `result()` resolves the codes at the end."""

    def __init__(self, table: Table | None = None) -> None:
        self.table = table or load()
        self.dry_run: Line | None = None
        self.hits: dict[str, _Hits] = {}
        self.evidence: dict[str, list[Line]] = {}
        self.tf_version: tuple[int, int] | None = None
        self.tf_version_line: Line | None = None
        self.lines_read = 0
        self._pending: list[_Pending] = []
        self.reasoners = Reasoners()  # the whole-log reasoners' facts (reasoners.py)
        # rest of a line after its timestamp -> (entry, where its match starts in that rest, its groups,
        # and for a reasoner's fact its value), and whether the line held any needle at all
        self._cache: dict[str, tuple[list[tuple[_Item, int, dict[str, str | None], object]], bool]] = {}
        # a line that held a needle but matched no signature may be half of a line a terminal wrapped
        self._wrap = wrap.Rejoiner(clean)
        self._items: list[_Item] = [
            *self.table.signatures,
            *self.table.evidence,
            *self.table.versions,
            *self.table.facts,
            *reasoners.facts(),
        ]
        # needle -> the entries (by position) with a pattern needing it: a line is tested only against the
        # entries whose needles it holds, so the cost per line does not grow with the size of the table
        by_needle: dict[str, set[int]] = {}
        for index, item in enumerate(self._items):
            for pattern in item.patterns:
                for needle in pattern.needles:
                    by_needle.setdefault(needle, set()).add(index)
        self._by_needle = tuple((needle, tuple(sorted(items))) for needle, items in sorted(by_needle.items()))
        self.scanner = NeedleScanner([*by_needle, DRY_RUN_MARKER])
        # the log's end, for the failure-looking lines no entry knows (unrecognised.py)
        self._tail: unrecognised.LineTail | unrecognised.BlockTail | None = None

    @property
    def wants_next(self) -> bool:
        """True while a first line waits for its `then` line, or for the rest of a line a terminal wrapped:
        the reader must feed the next lines too."""
        return bool(self._pending) or self._wrap.waiting

    def feed_stream(self, stream: BinaryIO, name: str) -> None:
        """Every line of a log stream that can matter (reader.blocks: raises UsageError on a binary file)."""
        total = 0
        tail = b"\n"
        self._tail = recent = unrecognised.BlockTail()
        for first, block in blocks(stream, name):
            if not block:
                continue
            number, counted_to, fed_to = first, 0, 0
            if self.wants_next:  # the line before this block asked for the lines after it
                newline = block.find(b"\n")
                fed_to = self._feed_span(block, number, 0, len(block) if newline == -1 else newline)
            for start, end in self.scanner.line_spans(block):
                if start < fed_to:
                    continue  # already fed as the `then` line of an earlier one
                number += block.count(b"\n", counted_to, start)
                counted_to = start
                # the line before it, unread by the scan, may be the first half of a wrapped line
                before = block[block.rfind(b"\n", 0, start - 1) + 1 : start - 1] if start > fed_to else None
                fed_to = self._feed_span(block, number, start, end, before)
            total = first + block.count(b"\n")
            tail = block[-1:]
            recent.add(block, total - 1 if tail == b"\n" else total)
        self.lines_read = max(self.lines_read, total - 1 if tail == b"\n" else total)

    def _feed_span(self, block: bytes, number: int, start: int, end: int, before: bytes | None = None) -> int:
        """Feeds the line at block[start:end] (in pieces when it is longer than CHUNK) and, while a `then` is
        pending, the lines after it. Returns where the next unfed line starts."""
        while True:
            for piece in range(start, max(end, start + 1), CHUNK):
                self.feed(
                    number, block[piece : min(end, piece + CHUNK)].decode("utf-8", errors="replace"), before
                )
                before = None
            if not self.wants_next or end >= len(block):
                return end + 1
            start, end = end + 1, block.find(b"\n", end + 1)
            if end == -1:
                end = len(block)
            number += 1

    def feed_lines(self, lines: Iterable[str]) -> None:
        """Every line of a log given as lines (numbered from 1): the line API's way in."""
        self._tail = recent = unrecognised.LineTail()
        for number, line in enumerate(lines, start=1):
            self.feed(number, line)
            recent.add(number, line)

    def feed(self, number: int, raw: str, before: bytes | None = None) -> None:
        """Matches one line (`before`: the line above it, when the caller skipped it)."""
        self.lines_read = max(self.lines_read, number)  # a long line may arrive as several chunks
        text = clean(raw)
        if not text:
            return
        probe = text[:MAX_MATCH_CHARS]
        if self.dry_run is None and DRY_RUN_MARKER in probe:
            self.dry_run = Line(number, _shown(text, probe.index(DRY_RUN_MARKER)))
        if self._pending:
            self._feed_then(number, text, probe, probe.lower())
        stamp = _STAMP.match(probe)
        skip = stamp.end() if stamp else 0
        key = probe[skip:]
        cached = self._cache.get(key)
        if cached is None:
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            cached = self._cache[key] = self._match(probe, skip)
        matched, needled = cached
        unread = needled and not any(isinstance(m[0], Signature) for m in matched)
        for first, whole, hits in self._wrap.see(number, text, before, unread, self._signatures_in):
            for sig, start, groups in hits:
                self._record(sig, Line(first, _shown(whole, start)), groups)
        for item, start, groups, value in matched:
            line = Line(number, _shown(text, max(0, start + skip)))
            if isinstance(item, (Signature, Version)) and item.then:
                self._pending.append(_Pending(item, line))
            else:
                self._record(item, line, groups, value)

    def _match(
        self, probe: str, skip: int
    ) -> tuple[list[tuple[_Item, int, dict[str, str | None], object]], bool]:
        """The entries a line matches, in table order, with where each match starts after `skip`; and whether
        the line held any needle at all."""
        lowered = probe.lower()
        matched = []
        candidates = {i for needle, items in self._by_needle if needle in lowered for i in items}
        for index in sorted(candidates):  # in table order, as every entry was tried before
            item = self._items[index]
            match = next(filter(None, (p.search(probe, lowered) for p in item.patterns)), None)
            if match is not None:
                matched.append((item, match.start() - skip, match.groupdict(), _value_of(item, match)))
        return matched, bool(candidates)

    def _signatures_in(self, text: str) -> list[tuple[Signature, int, dict[str, str | None]]]:
        """The signatures (without a `then`) a joined line matches, where and with which groups: a line a
        terminal wrapped, read as one (wrap.py)."""
        matched = self._match(text[:MAX_MATCH_CHARS], 0)[0]
        return [(m, at, groups) for m, at, groups, _ in matched if isinstance(m, Signature) and not m.then]

    def _feed_then(self, number: int, text: str, probe: str, lowered: str) -> None:
        still = []
        for pending in self._pending:
            match = next(filter(None, (p.search(probe, lowered) for p in pending.item.then)), None)
            if match is not None:
                then = Line(number, _shown(text, match.start()))
                self._record(pending.item, pending.first, match.groupdict(), then=then)
            elif pending.left > 1:
                pending.left -= 1
                still.append(pending)
        self._pending = still

    def _record(
        self,
        item: _Item,
        line: Line,
        groups: dict[str, str | None],
        value: object = None,
        then: Line | None = None,
    ) -> None:
        if isinstance(item, capability.Fact):
            self.reasoners.record(item, line, value)
        elif isinstance(item, Signature):
            hits = self.hits.setdefault(item.id, _Hits())
            hits.add(line)
            if then is not None and len(hits.lines) < MAX_LINES_KEPT:
                hits.lines.append(then)
        elif isinstance(item, Evidence):
            if _UNTICKED.match(line.text):
                return  # an issue template's option left unticked ("- [ ] Linux in WSL") is not this machine
            seen = self.evidence.setdefault(item.context, [])
            if len(seen) < MAX_LINES_KEPT:
                seen.append(line)
        elif isinstance(item, Fact):
            self.reasoners.report.add_fact(item.kind, line)
        elif groups.get("minor") is not None:
            if groups.get("name"):
                self.reasoners.report.add_package(groups, then or line)
            if self.tf_version is None:
                self.tf_version = int(groups.get("major") or 2), int(groups["minor"] or 0)
                self.tf_version_line = then or line

    def result(self) -> Diagnosis:
        resolve.docker_on_windows(self.evidence)
        gpu_request.settle(self.evidence)
        contexts = set(self.evidence)
        found = set(self.hits)
        failed = any(self.table.by_id(sig_id).is_failure for sig_id in self.hits)
        reasoned = self.reasoners.verdicts(
            self.table, failed, contexts, self.tf_version, self.tf_version_line
        )
        found |= set(reasoned)
        findings: list[Finding] = []
        for sig in self.table.signatures:
            hits = self.hits.get(sig.id)
            if sig.when_tf_version and self.tf_version_line is not None:
                hits = _Hits([self.tf_version_line], 1)
            verdict = reasoned.get(sig.id)
            if verdict is not None:
                hits = _Hits(verdict.lines, len(verdict.lines))
            if hits is None:
                continue
            if sig.requires_context and not contexts & set(sig.requires_context):
                continue
            if contexts & set(sig.unless_context) or found & set(sig.unless):
                continue
            if sig.min_tf and (self.tf_version is None or self.tf_version < sig.min_tf):
                continue
            finding = resolve.resolve(sig, hits.lines, hits.count, contexts, self.tf_version)
            if verdict is not None:
                finding.why, finding.moots = verdict.why, verdict.moots
            if self.dry_run is not None and finding.is_failure and finding.code in _GPU_CODES:
                continue  # the GPUs were hidden on purpose: their absence is not a cause
            findings.append(finding)
        findings, heard = prose.split(findings)  # the user's words count only where no log line failed
        if self.dry_run is None:
            self.reasoners.conclude(
                findings, self.table, self.evidence, self.tf_version, self.tf_version_line
            )
        prose.weigh(findings, heard)
        self.reasoners.reread(findings)
        resolve.mark_echoes(findings)
        findings.sort(key=resolve.order)
        evidence = {ctx: self.evidence[ctx] for ctx in CONTEXTS if ctx in self.evidence}
        if self.dry_run is not None:
            evidence[DRY_RUN_CONTEXT] = [self.dry_run]
        version = None if self.tf_version is None else "{}.{}".format(*self.tf_version)
        unknown: list[Line] = []
        leads: list[tuple[int, float]] = []
        if self._tail is not None and self.dry_run is None and not any(f.is_failure for f in findings):
            tail = [Line(line.number, clean(line.text)) for line in self._tail.lines()]
            noted = {line.number for f in findings if not f.is_failure for line in f.lines}
            unclaimed, worded = worded_lines.split_tail(
                tail,
                noted,
                lambda text: [m for m, *_ in self._match(text[:MAX_MATCH_CHARS], 0)[0]],
                lambda text: any(not sig.is_failure for sig, *_ in self._signatures_in(text)),
                _STAMP,
            )
            unknown = [Line(n, _shown(text, at)) for n, text, at in unrecognised.failure_looking(unclaimed)]
            # nothing known failed: the last reading, which layer the unclaimed lines' words name
            inferred = layer_words.read(worded, set(self.evidence), self.tf_version)
            if inferred is None:
                # no words name a layer either, yet lines read like a failure: what the log is most like
                inferred, leads = resemblance.read(tail, unknown)
            if inferred is not None:
                findings.insert(0, inferred)
        return Diagnosis(findings, evidence, self.lines_read, version, self.tf_version_line, unknown, leads)


def _value_of(item: _Item, match: re.Match[str]) -> object:
    """What a reasoner's fact line says (a capability, a CUDA release, a GPU's name); None for table entries,
    whose named groups are kept instead."""
    return item.value(match) if isinstance(item, capability.Fact) else None


def diagnose(source: str | Iterable[str], table: Table | None = None) -> Diagnosis:
    """The public API: name the known causes in a log given as one text or as lines (`diagnose_file`
    for a file, which is how `run` explains a failed smoke test with the same signatures)."""
    lines: Iterable[str] = source.splitlines() if isinstance(source, str) else source
    matcher = Matcher(table)
    matcher.feed_lines(lines)
    return matcher.result()


def diagnose_file(path: str | Path, table: Table | None = None) -> Diagnosis:
    """Like `diagnose`, for a log file of any size (streamed). Never raises: an unreadable or binary
    file gives an empty diagnosis, so a caller explaining a failure cannot fail itself."""
    matcher = Matcher(table)
    try:
        with open(path, "rb") as stream:
            matcher.feed_stream(stream, str(path))
    except (OSError, UsageError):
        pass
    return matcher.result()
