"""Match a log against the signature table, line by line, in bounded memory.

One pass: every line is tested against every signature's patterns (a literal prefilter first, so most lines
cost a few substring tests) and against the evidence patterns that say where the log came from. Only the
first few lines of each finding are kept, so a gigabyte of log costs time, not memory. Context-dependent
codes are resolved at the end, when all the evidence is in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tfdist_validate.diagnose.reader import numbered_lines
from tfdist_validate.diagnose.signatures import CONTEXTS, Evidence, Pattern, Signature, Table, load
from tfdist_validate.errors import UsageError
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Layer

MAX_LINES_KEPT = 3  # example lines kept per finding
MAX_MATCH_CHARS = 64 * 1024  # the reader's chunk: longer lines arrive as several chunks
GATE_MIN_NEEDLE = 4  # shorter literals occur in almost every line: no use as a prefilter
MAX_SHOWN_CHARS = 240
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# Which layer each code belongs to, so "most fundamental" means what it means for `run` (verdict.py).
_LAYER: dict[ExitCode, int] = {
    ExitCode.CONTAINER_NO_GPU: Layer.RUNTIME,
    ExitCode.WSL2_PASSTHROUGH: Layer.RUNTIME,
    ExitCode.NO_DRIVER: Layer.DRIVER,
    ExitCode.GPU_UNHEALTHY: Layer.HEALTH,
    ExitCode.DRIVER_TOO_OLD: Layer.TENSORFLOW,  # run compares the driver with the TF build there
    ExitCode.TF_IMPORT_FAILED: Layer.TENSORFLOW,
    ExitCode.TF_NOT_CUDA_BUILD: Layer.TENSORFLOW,
    ExitCode.TF_NO_GPU: Layer.TENSORFLOW,
    ExitCode.UNSUPPORTED_GPU: Layer.TENSORFLOW,
    ExitCode.TOO_FEW_GPUS: Layer.DEVICES,
    ExitCode.COLLECTIVE_FAILED: Layer.STRATEGY,
    ExitCode.TRAINING_FAILED: Layer.TRAINING,
    ExitCode.RESULT_MISMATCH: Layer.RESULTS,
    ExitCode.PERF_BELOW_FLOOR: Layer.PERFORMANCE,
}


def rank(code: ExitCode) -> tuple[int, int]:
    """Sort key: lowest layer first, then lowest code. A watchdog timeout names no layer: it comes last."""
    return (_LAYER.get(code, Layer.PERFORMANCE + 10), int(code))


@dataclass(frozen=True)
class Line:
    number: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.number, "text": self.text}


@dataclass
class Finding:
    signature: Signature
    code: ExitCode | None
    lines: list[Line]
    count: int
    context: str | None = None  # the evidence that chose the code, for a context-dependent line
    alternatives: str = ""  # set when the code was a guess for want of evidence

    @property
    def is_failure(self) -> bool:
        return self.signature.is_failure

    def to_json(self) -> dict[str, Any]:
        sig = self.signature
        return {
            "id": sig.id,
            "severity": sig.severity,
            "code": None if self.code is None else int(self.code),
            "name": None if self.code is None else self.code.name,
            "title": sig.title,
            "meaning": sig.meaning,
            "fix": sig.fix,
            "links": list(sig.links),
            "learnt_from": list(sig.sources),
            "lines": [line.to_json() for line in self.lines],
            "count": self.count,
            "context": self.context,
            "alternatives": self.alternatives or None,
        }


@dataclass
class Diagnosis:
    findings: list[Finding]  # failures (most fundamental first), then warnings, then harmless lines
    evidence: dict[str, list[Line]]  # context -> the lines that showed it
    lines_read: int

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.is_failure]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.signature.severity == "warning"]

    @property
    def harmless(self) -> list[Finding]:
        return [f for f in self.findings if f.signature.severity == "info"]

    @property
    def code(self) -> ExitCode:
        """What `run` would have returned for the most fundamental cause found; OK when none."""
        codes = [f.code for f in self.failures if f.code is not None]
        return min(codes, key=rank) if codes else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "code": int(self.code),
            "name": self.code.name,
            "lines_read": self.lines_read,
            "context": {ctx: [line.to_json() for line in lines] for ctx, lines in self.evidence.items()},
            "failures": [f.to_json() for f in self.failures],
            "warnings": [f.to_json() for f in self.warnings],
            "harmless": [f.to_json() for f in self.harmless],
        }


@dataclass
class _Hits:
    lines: list[Line] = field(default_factory=list)
    count: int = 0

    def add(self, line: Line) -> None:
        self.count += 1
        if len(self.lines) < MAX_LINES_KEPT:
            self.lines.append(line)


_WORD = re.compile(r"\w+")
# Words too common in ordinary TensorFlow / Python logs to be worth anything as a gate.
_COMMON_WORDS = frozenset(
    [
        "tensorflow",
        "cuda",
        "device",
        "devices",
        "driver",
        "drivers",
        "error",
        "errors",
        "failed",
        "warning",
        "kernel",
        "module",
        "runtime",
        "platform",
        "packages",
        "python",
        "library",
        "libraries",
        "memory",
        "found",
        "because",
        "available",
        "running",
        "create",
        "created",
        "image",
        "range",
        "results",
        "common",
        "default",
        "training",
        "engine",
        "local",
        "files",
        "install",
        "version",
        "versions",
        "compute",
        "operations",
        "dynamic",
        "initialize",
    ]
)
_MIN_ANCHOR = 5


def anchor_word(needle: str) -> str | None:
    """The longest whole word inside `needle` (a word with a non-word character on both sides within the
    needle, so it is a complete word wherever the needle occurs), ignoring very common words; a long
    identifier that is the whole needle counts too (error names are never part of longer words)."""
    if _WORD.fullmatch(needle) and len(needle) >= 2 * _MIN_ANCHOR:
        return needle  # an identifier such as ncclsystemerror or cuda_error_no_device: always a token
    best = None
    for match in _WORD.finditer(needle):
        start, end = match.span()
        if start == 0 or end == len(needle):  # may be part of a longer word in the line
            continue
        word = match.group()
        if word in _COMMON_WORDS or len(word) < _MIN_ANCHOR:
            continue
        if best is None or len(word) > len(best):
            best = word
    return best


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
        ExitCode.TF_NO_GPU,
        ExitCode.UNSUPPORTED_GPU,
        ExitCode.GPU_UNHEALTHY,
    }
)


class Matcher:
    """Feed lines with `feed`; `result()` resolves the codes once every line has been seen."""

    def __init__(self, table: Table | None = None) -> None:
        self.table = table or load()
        self.dry_run: Line | None = None
        self.hits: dict[str, _Hits] = {}
        self.evidence: dict[str, list[Line]] = {}
        self.lines_read = 0
        # The gate: most log lines contain none of the literals any pattern needs, and then only the
        # few patterns without a usable literal run. A set of whole words is tested with one C-level
        # tokenisation (a regex alternation of ~200 literals costs ten times more per line).
        items = self.table.signatures + self.table.evidence
        anchors: set[str] = set()
        substrings: set[str] = set()
        always: list[tuple[Signature | Evidence, tuple[Pattern, ...]]] = []
        for item in items:
            unanchored = []
            for pattern in item.patterns:
                if len(pattern.needle) < GATE_MIN_NEEDLE:
                    unanchored.append(pattern)
                    continue
                word = anchor_word(pattern.needle)
                if word:
                    anchors.add(word)
                else:
                    substrings.add(pattern.needle)
            if unanchored:
                always.append((item, tuple(unanchored)))
        self._anchors = frozenset(anchors)
        self._substrings = tuple(sorted(substrings))
        self._always = always
        self._all: list[tuple[Signature | Evidence, tuple[Pattern, ...]]] = [
            (item, item.patterns) for item in items
        ]

    def _gate(self, lowered: str) -> bool:
        if not self._anchors.isdisjoint(_WORD.findall(lowered)):
            return True
        return any(map(lowered.__contains__, self._substrings))

    def feed_stream(self, stream: BinaryIO, name: str) -> None:
        """Every line of a log stream (reader.numbered_lines: raises UsageError on a binary file)."""
        for number, text in numbered_lines(stream, name):
            self.feed(number, text)

    def feed(self, number: int, raw: str) -> None:
        self.lines_read = max(self.lines_read, number)  # a long line may arrive as several chunks
        text = clean(raw)
        if not text:
            return
        probe = text[:MAX_MATCH_CHARS]
        if self.dry_run is None and DRY_RUN_MARKER in probe:
            self.dry_run = Line(number, _shown(text, probe.index(DRY_RUN_MARKER)))
        lowered = probe.lower()
        line: Line | None = None
        candidates = self._all if self._gate(lowered) else self._always
        for item, patterns in candidates:
            match = next(filter(None, (p.search(probe, lowered) for p in patterns)), None)
            if match is None:
                continue
            line = line or Line(number, _shown(text, match.start()))
            if isinstance(item, Signature):
                self.hits.setdefault(item.id, _Hits()).add(line)
            else:
                seen = self.evidence.setdefault(item.context, [])
                if len(seen) < MAX_LINES_KEPT:
                    seen.append(line)

    def result(self) -> Diagnosis:
        contexts = set(self.evidence)
        found = set(self.hits)
        findings: list[Finding] = []
        for sig in self.table.signatures:
            hits = self.hits.get(sig.id)
            if hits is None:
                continue
            if sig.requires_context and not contexts & set(sig.requires_context):
                continue
            if contexts & set(sig.unless_context) or found & set(sig.unless):
                continue
            finding = _resolve(sig, hits, contexts)
            if self.dry_run is not None and finding.is_failure and finding.code in _GPU_CODES:
                continue  # the GPUs were hidden on purpose: their absence is not a cause
            findings.append(finding)
        findings.sort(key=_order)
        evidence = {ctx: self.evidence[ctx] for ctx in CONTEXTS if ctx in self.evidence}
        if self.dry_run is not None:
            evidence[DRY_RUN_CONTEXT] = [self.dry_run]
        return Diagnosis(findings, evidence, self.lines_read)


# A container on a WSL2 host is still a container: its GPU access is given (or not) when it starts.
_CONTEXT_PRIORITY = ("container", "wsl2", "windows", "macos")


def _resolve(sig: Signature, hits: _Hits, contexts: set[str]) -> Finding:
    if not sig.by_context:
        return Finding(sig, sig.code, hits.lines, hits.count)
    for ctx in _CONTEXT_PRIORITY:
        if ctx in contexts and ctx in sig.by_context:
            return Finding(sig, sig.by_context[ctx], hits.lines, hits.count, context=ctx)
    return Finding(sig, sig.code, hits.lines, hits.count, alternatives=sig.alternatives)


def _order(finding: Finding) -> tuple[int, tuple[int, int], int]:
    severity = ("error", "warning", "info").index(finding.signature.severity)
    code_rank = rank(finding.code) if finding.code is not None else (0, 0)
    return (severity, code_rank, finding.lines[0].number if finding.lines else 0)


def diagnose(source: str | Iterable[str], table: Table | None = None) -> Diagnosis:
    """The public API: name the known causes in a log given as one text or as lines (`diagnose_file`
    for a file, which is how `run` explains a failed smoke test with the same signatures)."""
    lines: Iterable[str] = source.splitlines() if isinstance(source, str) else source
    matcher = Matcher(table)
    for number, line in enumerate(lines, start=1):
        matcher.feed(number, line)
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
