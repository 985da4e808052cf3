"""Every diagnose signature against the real log lines it was learnt from (tests/fixtures/logs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tfdist_validate.diagnose import diagnose, load
from tfdist_validate.diagnose.engine import Matcher
from tfdist_validate.diagnose.needles import literal_needle, literal_needles
from tfdist_validate.diagnose.signatures import SignatureError, parse_text

LOGS = Path(__file__).parent / "fixtures" / "logs"
ENTRIES: list[dict[str, Any]] = yaml.safe_load((LOGS / "real_lines.yaml").read_text(encoding="utf-8"))
TABLE = load()


def _entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['signature']}@{entry['source'].rsplit('/', 3)[-3]}#{entry['source'].rsplit('/', 1)[-1]}"


def test_every_signature_has_a_real_line() -> None:
    covered = {entry["signature"] for entry in ENTRIES}
    missing = [sig.id for sig in TABLE.signatures if sig.id not in covered]
    assert missing == []


def test_a_reading_that_wsl2_changes_names_wsl2_when_the_log_shows_no_context() -> None:
    """A driver-level failure with no platform evidence gets its most likely code, and WSL2 is listed as the
    alternative: never guessed, never left out."""
    missing = [s.id for s in TABLE.signatures if "wsl2" in s.by_context and "(12)" not in s.alternatives]
    assert missing == []


def test_test_data_names_only_known_signatures() -> None:
    known = {sig.id for sig in TABLE.signatures}
    assert sorted({e["signature"] for e in ENTRIES} - known) == []


@pytest.mark.parametrize("entry", ENTRIES, ids=_entry_id)
def test_real_line_is_recognised(entry: dict[str, Any]) -> None:
    sig = TABLE.by_id(entry["signature"])
    # The line's thread is cited by the signature itself: the table says where its knowledge came from.
    assert entry["source"] in sig.sources
    log = (entry.get("context", "") + "\n" + entry["line"]).strip("\n")
    result = diagnose(log)
    found = {f.signature.id: f for f in result.findings}
    assert sig.id in found, [f.signature.id for f in result.findings]
    assert int(result.code) == entry["code"]
    hit = found[sig.id]
    assert hit.lines[-1].number == log.count("\n") + 1
    assert hit.lines[-1].text.strip("…") in entry["line"]
    if sig.severity == "error":
        assert hit.code is not None
    else:
        assert hit.code is None


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if TABLE.by_id(e["signature"]).severity != "error"], ids=_entry_id
)
def test_harmless_and_warning_lines_are_not_failures(entry: dict[str, Any]) -> None:
    result = diagnose(entry["line"])
    assert [f.signature.id for f in result.failures] == [] or entry["code"] != 0
    if entry["code"] == 0:
        assert int(result.code) == 0


def test_every_pattern_needle_occurs_in_the_lines_it_matches() -> None:
    """The literal prefilter must never hide a match: check it on every real line."""
    for entry in ENTRIES:
        for line in (entry.get("context", "") + "\n" + entry["line"]).splitlines():
            lowered = line.lower()
            for item in TABLE.signatures + TABLE.evidence:
                for pattern in item.patterns:
                    if pattern.regex.search(line):
                        assert any(n in lowered for n in pattern.needles), (item.id, pattern.text, line)


def test_the_scanner_finds_every_real_line() -> None:
    scanner = Matcher().scanner
    for entry in ENTRIES:
        if TABLE.by_id(entry["signature"]).then or "context" in entry:
            continue  # a `then` line is fed because of the line before it (test_diagnose_stream.py)
        line = entry["line"].encode()
        assert list(scanner.line_spans(line)) == [(0, len(line))], entry["line"]


# Ordinary lines of a healthy run (the reference document's output and TensorFlow's usual chatter): they
# must hold no needle, or every line of a big log would pay for the full table.
ORDINARY = [
    "Epoch 1/3",
    "40/40 [==============================] - 2s 10ms/step - loss: 0.6931 - binary_accuracy: 0.5000",
    # figures hold every 3-digit number sooner or later: a bare error number as a needle (802) matched here
    "235/469 [==============>...............] - ETA: 12s - loss: 0.0802 - accuracy: 0.8031 - val_loss: 0.18",
    "2023-01-01 12:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1886] Created device"
    " /job:localhost/replica:0/task:0/device:GPU:0 with 38420 MB memory",
    "INFO:tensorflow:batch_all_reduce: 4 all-reduces with algorithm = nccl, num_packs = 1",
    '  File "/usr/local/lib/python3.10/dist-packages/keras/src/engine/training.py", line 1742, in fit',
    "2020-11-18 19:09:31.423127: I tensorflow/stream_executor/platform/default/dso_loader.cc:48]"
    " Successfully opened dynamic library libcudart.so.10.1",
]


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_hold_no_needle(line: str) -> None:
    assert list(Matcher().scanner.line_spans(line.encode())) == []


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        ("NCCL WARN", "nccl warn"),
        (r"Could not load dynamic library .libcuda\.so", "could not load dynamic library "),
        (r"\b[\w.-]+@[0-9a-f]{12}:[~/]", "@"),
        (r"is_buil[dt]_with_cuda\(\)\)? *(?:#|->)? *false\b", "_with_cuda()"),
        ("a|b", ""),
        (r"foo\(a|b\)", ""),
        (r"StartAbort (?!Out of range)\w", "startabort "),
        ("colou?r", "colo"),
    ],
)
def test_literal_needle(pattern: str, needle: str) -> None:
    assert literal_needle(pattern) == needle


def test_every_branch_of_an_alternation_has_its_needle() -> None:
    assert literal_needles(r"foo (?:a|b)|bar\d") == ("foo ", "bar")
    assert literal_needles("abc") == ("abc",)


_GOOD = """
version: 1
contexts: []
signatures:
  - id: one
    severity: error
    code: NO_DRIVER
    title: t
    meaning: m
    fix: f
    patterns: ['abc']
    sources: ['https://example.org/1']
"""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("'abc'", "'(a+)+'"), "nests quantifiers"),
        (("'abc'", "'(unclosed'"), "not a valid regex"),
        (("'abc'", "'\\d+'"), "requires no literal"),
        (("code: NO_DRIVER", "code: NOPE"), "not a contract exit-code name"),
        (("severity: error", "severity: info"), "must not have one"),
        (("    sources: ['https://example.org/1']\n", ""), "sources must not be empty"),
        (("https://example.org/1", "http://example.org/1"), "not an https URL"),
        (("    fix: f\n", "    fix: f\n    colour: red\n"), "unknown keys"),
        (("id: one", "id: One Two"), "lowercase words"),
    ],
)
def test_malformed_signatures_are_refused_on_load(change: tuple[str, str], message: str) -> None:
    assert parse_text(_GOOD).signatures[0].id == "one"
    with pytest.raises(SignatureError, match=message):
        parse_text(_GOOD.replace(*change))


def test_numbas_system_report_on_a_machine_without_a_gpu_is_no_missing_driver() -> None:
    """`numba -s` prints this on every machine without a CUDA GPU (numba's docs, "Debugging"); only the
    loader's own error ("Error at driver init: CUDA driver library cannot be found") says the driver is
    missing."""
    report = "Warning (cuda): CUDA driver library cannot be found or no CUDA enabled devices are present."
    assert "libcuda-missing" not in {f.signature.id for f in diagnose(report).failures}
    assert "libcuda-missing" in {
        f.signature.id
        for f in diagnose(
            "CudaSupportError: Error at driver init: CUDA driver library cannot be found"
        ).failures
    }
