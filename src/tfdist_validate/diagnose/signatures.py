"""The knowledge behind `diagnose`: signatures.yaml, loaded with yaml.safe_load and validated on load.

A signature is data: the patterns that give a cause away, the contract code it means, what it means, the
fix, and the public thread it was learnt from. Adding knowledge means adding an entry, not code.
Evidence entries ("contexts") say where a log came from (container, WSL2, native Windows, macOS): a few
lines mean different things in different places, e.g. a failed `nvidia-smi`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from tfdist_validate.diagnose.needles import literal_needles
from tfdist_validate.exitcodes import ExitCode

SEVERITIES = ("error", "warning", "info")
# Where a log came from, in the order they are listed, with the words a reader is shown for each.
# container-no-gpu / container-gpu: a container's start that did not / did ask for a GPU (gpu_request.py)
# container-no-compute: a GPU asked for without the driver's compute (CUDA) libraries (gpu_request.py)
# container-build: an image build, whose RUN steps never get a GPU (gpu_request.py)
# linux: Linux-only lines; with native Windows evidence they show WSL2 (resolve.docker_on_windows)
# collective: a stage, not a place: a hang told in prose is a collective hang only beside it
CONTEXT_WORDS = {
    "container": "a container",
    "wsl2": "WSL2",
    "windows": "native Windows",
    "macos": "macOS",
    "container-no-gpu": (
        "a container started without a GPU request (no --gpus, --runtime=nvidia, CDI device or --nv)"
    ),
    "container-gpu": "a container started with a GPU request",
    "container-no-compute": (
        "a container whose GPU request leaves out the driver's compute capability (no libcuda mounted)"
    ),
    "linux": "Linux (a bash prompt, an ELF library or a Linux-only path)",
    "collective": "GPUs being joined for collectives (NCCL's lines, the CUDA P2P sample or nccl-tests)",
    "container-build": "a container image build (docker / podman build: its RUN steps never get a GPU)",
    "overclock": "a GPU run above its stock clocks or below its stock voltage",
    "no-nvidia-gpu": "a machine whose owner says it has no NVIDIA GPU",
}
CONTEXTS = tuple(CONTEXT_WORDS)
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# A group that repeats something which itself repeats, e.g. (a+)+ or (.*x)*: the shape of catastrophic
# backtracking. Patterns are matched against every line of logs of any size, so such shapes are refused.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)[*+{]")


class SignatureError(ValueError):
    """signatures.yaml is malformed: a packaging bug, reported with the entry that is wrong."""


# Whole-log reasoners a signature can name (`reasoner:`): facts gathered in the one pass, judged at the end.
REASONERS = ("selfreport", "gpu-capability", "driver-cuda")
MIN_NEEDLE = 1  # every pattern must require some literal: a line holding no needle is never matched


@dataclass(frozen=True)
class Pattern:
    text: str
    regex: re.Pattern[str]
    needles: tuple[str, ...]  # lowercase literals, one of which every match contains: the prefilter

    def search(self, line: str, lowered: str) -> re.Match[str] | None:
        if not any(needle in lowered for needle in self.needles):
            return None
        return self.regex.search(line)


@dataclass(frozen=True)
class Evidence:
    id: str
    context: str
    title: str
    patterns: tuple[Pattern, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Fact:
    """Lines that say something about the TensorFlow build the log ran, for the self-report reasoner
    (selfreport.py). Kinds: `cuda-build` (the build has CUDA: an XLA_GPU device, `is_cuda_build` True),
    `cpu-build` (a line of the build itself names its CPU-only variant: it decides only TensorFlow's no-GPU
    answer on native Windows, never alone)."""

    id: str
    kind: str
    title: str
    patterns: tuple[Pattern, ...]
    sources: tuple[str, ...]


FACT_KINDS = ("cuda-build", "cpu-build", "xla-gpu", "xla-cpu", "gpu-device")


@dataclass(frozen=True)
class Version:
    """Lines that say which TensorFlow the log ran: named groups `minor` and `major` (2 when absent; in `then`
    when set). A pattern that also names the package (group `name`, with optional `patch`, `build` and
    `channel`: a pip / conda list row, a pin, pip's "Successfully installed") is a package fact too."""

    id: str
    title: str
    patterns: tuple[Pattern, ...]
    sources: tuple[str, ...]
    then: tuple[Pattern, ...] = ()  # the value is on one of the next lines (a heading, then the version)


@dataclass(frozen=True)
class Signature:
    id: str
    severity: str
    code: ExitCode | None
    title: str
    meaning: str
    fix: str
    patterns: tuple[Pattern, ...]
    links: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    by_context: Mapping[str, ExitCode] = field(default_factory=dict)
    alternatives: str = ""  # what else the line could mean when the log gives no context
    requires_context: tuple[str, ...] = ()  # counts only when one of these contexts is evident
    unless_context: tuple[str, ...] = ()  # does not count when one of these contexts is evident
    unless: tuple[str, ...] = ()  # does not count when one of these signatures was found too
    then: tuple[Pattern, ...] = ()  # counts only when one of these matches one of the next non-blank lines
    when_tf_version: bool = False  # hit by any line that says TensorFlow's version (no patterns of its own)
    min_tf: tuple[int, int] | None = None  # counts only when the log shows TensorFlow at least this version
    older_tf_on_windows: tuple[int, int] | None = None  # native Windows below this version: TF_NO_GPU
    reasoner: str = ""  # hit by a whole-log reasoner (REASONERS) instead of patterns of its own
    no_gpu_answer: bool = False  # TensorFlow's own answer that it has no GPU: selfreport.py weighs it
    prose: bool = False  # the user's own words, not a program's line: weaker evidence (prose.py)

    @property
    def is_failure(self) -> bool:
        return self.severity == "error"


@dataclass(frozen=True)
class Table:
    signatures: tuple[Signature, ...]
    evidence: tuple[Evidence, ...]
    versions: tuple[Version, ...] = ()
    facts: tuple[Fact, ...] = ()

    def by_id(self, signature_id: str) -> Signature:
        for sig in self.signatures:
            if sig.id == signature_id:
                return sig
        raise KeyError(signature_id)


def _compile(where: str, text: Any) -> Pattern:
    if not isinstance(text, str) or not text:
        raise SignatureError(f"{where}: a pattern must be a non-empty string, got {text!r}")
    if _NESTED_QUANTIFIER.search(text):
        raise SignatureError(f"{where}: pattern {text!r} nests quantifiers (catastrophic backtracking)")
    try:
        regex = re.compile(text, re.IGNORECASE)
    except re.error as err:
        raise SignatureError(f"{where}: pattern {text!r} is not a valid regex: {err}") from None
    needles = literal_needles(text)
    if min(map(len, needles)) < MIN_NEEDLE:
        raise SignatureError(
            f"{where}: pattern {text!r} requires no literal of {MIN_NEEDLE}+ characters (in every branch):"
            " it could match lines that are never scanned"
        )
    return Pattern(text, regex, needles)


def compile_pattern(where: str, text: str) -> Pattern:
    """A pattern compiled and checked as a signature's is (diagnose/capability.py's facts use it too)."""
    return _compile(where, text)


def _strings(where: str, entry: Mapping[str, Any], key: str, *, required: bool = False) -> tuple[str, ...]:
    value = entry.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SignatureError(f"{where}: {key} must be a list of strings")
    if required and not value:
        raise SignatureError(f"{where}: {key} must not be empty")
    return tuple(value)


def _text(where: str, entry: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise SignatureError(f"{where}: {key} must be a non-empty string")
    return " ".join(value.split())


def _code(where: str, name: Any) -> ExitCode:
    if not isinstance(name, str) or name not in ExitCode.__members__:
        raise SignatureError(f"{where}: {name!r} is not a contract exit-code name")
    return ExitCode[name]


def _urls(where: str, entry: Mapping[str, Any], key: str, *, required: bool) -> tuple[str, ...]:
    urls = _strings(where, entry, key, required=required)
    for url in urls:
        if not url.startswith("https://"):
            raise SignatureError(f"{where}: {key}: {url!r} is not an https URL")
    return urls


_SIGNATURE_KEYS = {
    "id", "severity", "code", "title", "meaning", "fix", "patterns", "links", "sources", "by_context",
    "alternatives", "requires_context", "unless_context", "unless", "then", "when_tf_version", "min_tf",
    "older_tf_on_windows", "reasoner", "no_gpu_answer", "prose",
}  # fmt: skip
_VERSION_KEYS = {"id", "title", "patterns", "then", "sources"}
_VERSION_TEXT = re.compile(r"^(\d+)\.(\d+)$")
_EVIDENCE_KEYS = {"id", "context", "title", "patterns", "sources"}
_FACT_KEYS = {"id", "kind", "title", "patterns", "sources"}


def _identify(kind: str, position: str, entry: Any, keys: set[str]) -> tuple[str, str]:
    """Checks an entry's shape, id and keys; returns its id and the name errors should use for it."""
    if not isinstance(entry, dict):
        raise SignatureError(f"{position}: expected a mapping")
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not _ID.match(entry_id):
        raise SignatureError(f"{position}: id {entry_id!r} must be lowercase words joined by '-'")
    where = f"{kind} {entry_id}"
    unknown = set(entry) - keys
    if unknown:
        raise SignatureError(f"{where}: unknown keys {sorted(unknown)}")
    return entry_id, where


def _patterns(
    where: str, entry: dict[str, Any], key: str = "patterns", required: bool = True
) -> tuple[Pattern, ...]:
    return tuple(
        _compile(f"{where}: {key}[{i}]", p)
        for i, p in enumerate(_strings(where, entry, key, required=required))
    )


def _version(where: str, entry: Mapping[str, Any], key: str) -> tuple[int, int] | None:
    value = entry.get(key)
    if value is None:
        return None
    found = _VERSION_TEXT.match(value) if isinstance(value, str) else None
    if not found:
        raise SignatureError(f"{where}: {key} must be a 'major.minor' string, got {value!r}")
    return int(found.group(1)), int(found.group(2))


def parse_entry(index: int, entry: Any, listed_in: str = "signatures") -> Signature:
    """One signature-shaped entry, checked as the table's are (layer_words.py reads its entries with it)."""
    sig_id, where = _identify("signature", f"{listed_in}[{index}]", entry, _SIGNATURE_KEYS)
    severity = entry.get("severity")
    if severity not in SEVERITIES:
        raise SignatureError(f"{where}: severity must be one of {SEVERITIES}")
    code = None if entry.get("code") is None else _code(where, entry["code"])
    if (severity == "error") != (code is not None):
        raise SignatureError(f"{where}: an error needs a code; a warning or info must not have one")
    by_context_raw = entry.get("by_context", {}) or {}
    if not isinstance(by_context_raw, dict) or not set(by_context_raw) <= set(CONTEXTS):
        raise SignatureError(f"{where}: by_context keys must be among {CONTEXTS}")
    if by_context_raw and code is None:
        raise SignatureError(f"{where}: by_context needs a default code")
    by_context = {ctx: _code(where, name) for ctx, name in by_context_raw.items()}
    contexts = {key: _strings(where, entry, key) for key in ("requires_context", "unless_context")}
    for key, values in contexts.items():
        if not set(values) <= set(CONTEXTS):
            raise SignatureError(f"{where}: {key} must be among {CONTEXTS}")
    flags = {key: entry.get(key, False) for key in ("when_tf_version", "no_gpu_answer", "prose")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise SignatureError(f"{where}: {key} must be true or false")
    when_tf_version = flags["when_tf_version"]
    reasoner = entry.get("reasoner", "")
    if reasoner and reasoner not in REASONERS:
        raise SignatureError(f"{where}: reasoner must be one of {REASONERS}")
    if reasoner and entry.get("patterns"):
        raise SignatureError(f"{where}: a reasoned signature has no patterns (its reasoner finds it)")
    patterns = _patterns(where, entry, required=not (when_tf_version or reasoner))
    return Signature(
        id=sig_id,
        severity=severity,
        code=code,
        title=_text(where, entry, "title"),
        meaning=_text(where, entry, "meaning"),
        fix=_text(where, entry, "fix"),
        patterns=patterns,
        links=_urls(where, entry, "links", required=False),
        sources=_urls(where, entry, "sources", required=True),
        by_context=by_context,
        alternatives=_text(where, entry, "alternatives", required=False),
        requires_context=contexts["requires_context"],
        unless_context=contexts["unless_context"],
        unless=_strings(where, entry, "unless"),
        then=_patterns(where, entry, "then", required=False),
        when_tf_version=when_tf_version,
        min_tf=_version(where, entry, "min_tf"),
        older_tf_on_windows=_version(where, entry, "older_tf_on_windows"),
        reasoner=reasoner,
        no_gpu_answer=flags["no_gpu_answer"],
        prose=flags["prose"],
    )


def _evidence(index: int, entry: Any) -> Evidence:
    ev_id, where = _identify("context", f"contexts[{index}]", entry, _EVIDENCE_KEYS)
    context = entry.get("context")
    if context not in CONTEXTS:
        raise SignatureError(f"{where}: context must be one of {CONTEXTS}")
    return Evidence(
        ev_id,
        context,
        _text(where, entry, "title"),
        _patterns(where, entry),
        _urls(where, entry, "sources", required=True),
    )


def _fact(index: int, entry: Any) -> Fact:
    fact_id, where = _identify("fact", f"facts[{index}]", entry, _FACT_KEYS)
    kind = entry.get("kind")
    if kind not in FACT_KINDS:
        raise SignatureError(f"{where}: kind must be one of {FACT_KINDS}")
    sources = _urls(where, entry, "sources", required=True)
    return Fact(fact_id, kind, _text(where, entry, "title"), _patterns(where, entry), sources)


def _tf_version(index: int, entry: Any) -> Version:
    version_id, where = _identify("version", f"versions[{index}]", entry, _VERSION_KEYS)
    patterns = _patterns(where, entry)
    then = _patterns(where, entry, "then", required=False)
    for pattern in then or patterns:
        if "minor" not in pattern.regex.groupindex:
            raise SignatureError(f"{where}: {pattern.text!r} needs the named group minor (and major, or 2)")
    sources = _urls(where, entry, "sources", required=True)
    return Version(version_id, _text(where, entry, "title"), patterns, sources, then)


def parse(data: Any) -> Table:
    if not isinstance(data, dict) or data.get("version") != 1:
        raise SignatureError("signatures: expected a mapping with version: 1")
    raw: dict[str, Any] = {key: data.get(key, []) for key in ("contexts", "versions", "facts")}
    raw["signatures"] = data.get("signatures")
    if not all(isinstance(value, list) for value in raw.values()):
        raise SignatureError("signatures: 'signatures', 'contexts', 'versions' and 'facts' must be lists")
    raw_sigs, raw_evidence, raw_versions = raw["signatures"], raw["contexts"], raw["versions"]
    signatures = tuple(parse_entry(i, e) for i, e in enumerate(raw_sigs))
    evidence = tuple(_evidence(i, e) for i, e in enumerate(raw_evidence))
    versions = tuple(_tf_version(i, e) for i, e in enumerate(raw_versions))
    facts = tuple(_fact(i, e) for i, e in enumerate(raw["facts"]))
    ids = (
        [s.id for s in signatures]
        + [e.id for e in evidence]
        + [v.id for v in versions]
        + [f.id for f in facts]
    )
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SignatureError(f"signatures: duplicate ids {duplicates}")
    known = {s.id for s in signatures}
    for sig in signatures:
        missing = set(sig.unless) - known
        if missing:
            raise SignatureError(f"signature {sig.id}: unless names unknown signatures {sorted(missing)}")
    return Table(signatures, evidence, versions, facts)


def parse_text(text: str) -> Table:
    try:
        return parse(yaml.safe_load(text))
    except yaml.YAMLError as err:
        raise SignatureError(f"signatures: not valid YAML: {err}") from None


@lru_cache(maxsize=1)
def load() -> Table:
    """The table shipped with the package (cached: it is parsed and compiled once per process)."""
    text = resources.files("tfdist_validate.diagnose").joinpath("signatures.yaml").read_text("utf-8")
    return parse_text(text)
