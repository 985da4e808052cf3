"""The streaming scan (blocks, needle scanner, `then` lookahead) finds what matching every line finds."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import script_module
from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.engine import Matcher
from tfdist_validate.diagnose.findings import Diagnosis
from tfdist_validate.diagnose.scan import NeedleScanner

FIXTURES = Path(__file__).parent / "fixtures"
REAL = yaml.safe_load((FIXTURES / "logs" / "real_lines.yaml").read_text(encoding="utf-8"))
EVAL = yaml.safe_load((FIXTURES / "diagnose_eval" / "excerpts.yaml").read_text(encoding="utf-8"))
# Every half, the held-back sets included: each has been scored once, at the end of its round
# (tests/fixtures/diagnose_eval/README.md); a next round's held-back set must be left out here until it is.
LOGS = [(e.get("context", "") + "\n" + e["line"]).strip("\n") for e in REAL]
NOT_YET_SCORED = script_module("benchmarks/diagnose_eval.py").NOT_YET_SCORED  # a next set, until it is scored
LOGS += [e["log"] for e in EVAL if e["half"] not in NOT_YET_SCORED]
LOGS += [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "logs").glob("*.log"))]


def _streamed(text: str) -> Diagnosis:
    matcher = Matcher()
    matcher.feed_stream(io.BytesIO(text.encode()), "<test>")
    return matcher.result()


def _summary(result: Diagnosis) -> tuple[Any, ...]:
    findings = [(f.signature.id, f.code, f.count, [line.number for line in f.lines]) for f in result.findings]
    unknown = [(line.number, line.text) for line in result.unrecognised]
    return int(result.code), findings, sorted(result.evidence), result.tf_version, result.lines_read, unknown


@pytest.mark.parametrize("index", range(len(LOGS)))
def test_streaming_finds_what_line_matching_finds(index: int) -> None:
    text = LOGS[index]
    assert _summary(_streamed(text)) == _summary(diagnose(text))


def test_needles_are_found_case_insensitively_and_lines_come_whole() -> None:
    scanner = NeedleScanner(["nccl warn", "[]"])
    block = b"epoch 1\nx NCCL Warn y\n[]\nlast NCCL WARN"
    assert [block[a:b] for a, b in scanner.line_spans(block)] == [b"x NCCL Warn y", b"[]", b"last NCCL WARN"]


def test_a_then_line_is_fed_even_when_it_holds_no_needle() -> None:
    text = "noise\ntf.config.list_physical_devices('GPU')\n\n[]\nnoise\n"
    result = _streamed(text)
    assert [f.signature.id for f in result.failures] == ["tf-empty-gpu-list"]
    assert [line.number for line in result.failures[0].lines] == [2, 4]


def test_a_repeated_line_is_matched_once_and_counted_every_time() -> None:
    numa = (
        "2024-03-01 10:00:{:02d}.000001: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:984]"
        " successful NUMA node read from SysFS had negative value (-1), but there must be at least one"
    )
    result = _streamed("\n".join(numa.format(i) for i in range(50)) + "\n")
    (finding,) = result.harmless
    assert (finding.signature.id, finding.count, finding.lines[0].number) == ("numa-node-negative", 50, 1)
