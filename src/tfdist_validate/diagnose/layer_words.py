"""The last reading of a log in which the table found no failure: which layer a failure line's words name.

Measured on real logs it had never seen, `diagnose` recognised nothing at all in most of the logs it got
wrong, although their failure line said plainly which layer failed, in words no single program owns ("minimum
required Nvidia driver", "Insufficient CUDA driver", "libcublas.so.9.0: cannot open shared object file").
layer_words.yaml holds those words per layer, shaped like signatures. They are read only when no table
entry found a failure, and only on the lines of the log's end that no entry claims (a harmless notice, a
context or a fact is claimed, so it is never re-read here): a known cause always wins over an inference, and
a log the table reads in full is read exactly as before.

The finding says that it was inferred, from which line and which words, and what else the line could mean:
the words name a layer, not a cause, so the reader is told how much to trust it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from tfdist_validate.diagnose import resolve
from tfdist_validate.diagnose.findings import Finding, Line, rank
from tfdist_validate.diagnose.signatures import Signature, SignatureError, compile_pattern, parse_entry

MAX_SHOWN = 3  # lines cited: the one that decided, and the next ones of the same layer


@dataclass(frozen=True)
class LayerWords:
    layers: tuple[Signature, ...]
    ignore: tuple[re.Pattern[str], ...]  # a line that says its own error does not matter
    disown: tuple[re.Pattern[str], ...] = ()  # a line that says the log's errors do not matter


def parse(data: Any) -> LayerWords:
    if not isinstance(data, dict) or data.get("version") != 1:
        raise SignatureError("layer words: expected a mapping with version: 1")
    raw_layers, raw_ignore, raw_disown = data.get("layers"), data.get("ignore", []), data.get("disown", [])
    if not isinstance(raw_layers, list) or not raw_layers or not isinstance(raw_ignore, list):
        raise SignatureError("layer words: 'layers' must be a non-empty list and 'ignore' a list")
    if not isinstance(raw_disown, list):
        raise SignatureError("layer words: 'disown' must be a list")
    layers = tuple(parse_entry(i, entry, "layers") for i, entry in enumerate(raw_layers))
    for layer in layers:
        if not layer.is_failure or not layer.patterns or not layer.id.startswith("words-"):
            raise SignatureError(f"layer words: {layer.id} must be an error with patterns, named words-...")
    ids = [layer.id for layer in layers]
    if len(set(ids)) != len(ids):
        raise SignatureError("layer words: duplicate ids")
    ignore = tuple(compile_pattern(f"layer words: ignore[{i}]", p).regex for i, p in enumerate(raw_ignore))
    disown = tuple(compile_pattern(f"layer words: disown[{i}]", p).regex for i, p in enumerate(raw_disown))
    return LayerWords(layers, ignore, disown)


@lru_cache(maxsize=1)
def load() -> LayerWords:
    text = resources.files("tfdist_validate.diagnose").joinpath("layer_words.yaml").read_text("utf-8")
    try:
        return parse(yaml.safe_load(text))
    except yaml.YAMLError as err:
        raise SignatureError(f"layer words: not valid YAML: {err}") from None


# Markdown emphasis a paste often carries around words ("_Check_ failed ... unhandled cuda _error_",
# "**Could not load dynamic library**"): markers at a word's edge only, so that "_pywrap_tensorflow" keeps its
# inner underscores
_EMPHASIS = re.compile(r"(?<![\w*])[_*]{1,2}(?=\w)|(?<=\w)[_*]{1,2}(?![\w*])")


def layer_of(text: str, words: LayerWords, contexts: set[str]) -> tuple[Signature, re.Match[str]] | None:
    """The first layer (in file order) whose words the line holds, if the line does not disown its error."""
    text = _EMPHASIS.sub("", text)
    if any(p.search(text) for p in words.ignore):
        return None
    lowered = text.lower()
    for layer in words.layers:
        if layer.requires_context and not contexts & set(layer.requires_context):
            continue
        match = next(filter(None, (p.search(text, lowered) for p in layer.patterns)), None)
        if match is not None:
            return layer, match
    return None


def _across(
    first: str, second: str, words: LayerWords, contexts: set[str]
) -> tuple[Signature, re.Match[str]] | None:
    """The layer two lines name together, when its words run across the break (not one line's alone)."""
    joined = f"{first.rstrip()} {second.lstrip()}"
    found = layer_of(joined, words, contexts)
    if found is None:
        return None
    cut = len(first.rstrip())
    return found if found[1].start() < cut < found[1].end() else None


def read(
    unclaimed: Iterable[Line],
    contexts: set[str],
    tf_version: tuple[int, int] | None,
    words: LayerWords | None = None,
) -> Finding | None:
    """The most fundamental layer named by the words of `unclaimed` (the log's last lines that no table entry
    matched), as a finding; None when no line names one."""
    words = words or load()
    unclaimed = list(unclaimed)
    if any(p.search(line.text) for line in unclaimed for p in words.disown):
        return None  # the log's writer has judged its failure-looking lines already
    named: dict[str, list[tuple[Line, str]]] = {}
    for i, line in enumerate(unclaimed):
        found = layer_of(line.text, words, contexts)
        following = unclaimed[i + 1] if i + 1 < len(unclaimed) else None
        if found is None and following is not None and following.number == line.number + 1:
            # a sentence a terminal or the paste broke ("CUDA 10.0 is not supported by" / "your driver (which
            # supports up to 9.0)"), read whole where neither half names a layer
            found = _across(line.text, following.text, words, contexts)
        if found is not None:
            layer, match = found
            named.setdefault(layer.id, []).append((line, match.group(0)))
    if not named:
        return None
    findings = []
    for layer in words.layers:
        hits = named.get(layer.id)
        if not hits:
            continue
        lines = [line for line, _ in hits]
        finding = resolve.resolve(layer, lines[:MAX_SHOWN], len(lines), contexts, tf_version)
        # an inference is never certain: what else the line could mean is always worth showing
        finding.alternatives = finding.alternatives or layer.alternatives
        finding.inferred = True
        line, words_said = hits[0]
        finding.why = (
            f"no known signature matched this log; line {line.number}'s words ({words_said.strip()!r}) name "
            "this layer, so the cause is inferred from them, not recognised"
        )
        findings.append(finding)
    return min(findings, key=lambda f: rank(f.code) if f.code is not None else (99, 99))
