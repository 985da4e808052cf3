"""A log that ends in a failure no signature knows: quoted as such (unrecognised.py), never called healthy."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tfdist_validate import cli
from tfdist_validate.diagnose import diagnose, diagnose_file
from tfdist_validate.diagnose.unrecognised import SHOWN
from tfdist_validate.exitcodes import ExitCode

LOGS = Path(__file__).parent / "fixtures" / "logs"
# a real Keras shape error (tensorflow/tensorflow#52245): a failure, but none of this tool's causes
KERAS_ERROR = LOGS / "keras-shape-mismatch-not-a-gpu-failure_tf-52245.log"
PROGRESS = "40/40 [==============================] - 2s 10ms/step - loss: 0.6931 - binary_accuracy: 0.5000\n"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    try:
        code = cli.main(argv, env={})
    finally:
        sys.stdin = old
    return code, capsys.readouterr().out


def test_an_unknown_failure_is_quoted_and_the_verdict_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(["diagnose", str(KERAS_ERROR)], capsys)
    assert code == 0  # the exit code names known causes only (CONTRACT.md)
    assert "not recognised: 4 line(s) near the end of the log read like a failure" in out
    assert "  line 18: ValueError: in user code:" in out
    assert "  line 3: ValueError                                Traceback (most recent call last)" in out
    verdict = out.rstrip().splitlines()[-1]
    assert (
        verdict.startswith("verdict: 0 OK: no known failure")
        and "read them before trusting the run" in verdict
    )


def test_the_json_report_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(["diagnose", "--json", str(KERAS_ERROR)], capsys)
    document = json.loads(out)
    assert code == 0 and document["failures"] == []
    assert document["unrecognised"][-1] == {"line": 18, "text": "ValueError: in user code:"}


def test_a_known_cause_or_a_healthy_log_quotes_nothing() -> None:
    # with a known cause the other error lines are its consequences; a healthy start's noise is known noise
    assert diagnose_file(LOGS / "docker-tf-latest-gpu-without-gpus_tf-41785.log").unrecognised == []
    healthy = diagnose_file(LOGS / "tf-2.17-startup-noise-only_relernn-63.log")
    assert healthy.code == ExitCode.OK and healthy.harmless and healthy.unrecognised == []


def test_only_the_last_few_are_quoted() -> None:
    log = [f"RuntimeError: step {i} went wrong" for i in range(SHOWN + 3)]
    assert [line.number for line in diagnose(log).unrecognised] == list(range(4, SHOWN + 4))


def test_a_dry_run_quotes_nothing() -> None:
    # the CPU dry run hides the GPUs on purpose: its GPU errors are expected (engine.DRY_RUN_MARKER)
    from tfdist_validate.diagnose.engine import DRY_RUN_MARKER

    assert diagnose([DRY_RUN_MARKER, "RuntimeError: no GPU devices"]).unrecognised == []


@pytest.mark.parametrize("megabytes", [0, 3])
def test_a_big_streamed_log_numbers_its_tail_right(tmp_path: Path, megabytes: int) -> None:
    """The streamed tail is the end of the last blocks (reader.BLOCK is 1 MiB): the lines quoted carry the
    numbers they have in the file, and the same as the line API gives, however many blocks came first."""
    ordinary = megabytes * (1 << 20) // len(PROGRESS)
    path = tmp_path / "job.log"
    path.write_text(PROGRESS * ordinary + KERAS_ERROR.read_text(encoding="utf-8"), encoding="utf-8")
    streamed = diagnose_file(path)
    assert streamed.unrecognised[-1].number == ordinary + 18
    assert streamed.unrecognised[-1].text == "ValueError: in user code:"
    assert streamed.unrecognised == diagnose(path.read_text(encoding="utf-8")).unrecognised


def test_a_giant_last_line_is_still_read(tmp_path: Path) -> None:
    # 3 MB without a newline: the stream's tail window holds only the end of it, which is where it failed
    path = tmp_path / "one-line.log"
    path.write_text("x" * 3_000_000 + " RuntimeError: something nobody has seen", encoding="utf-8")
    (line,) = diagnose_file(path).unrecognised
    assert line.number == 1 and line.text.endswith("RuntimeError: something nobody has seen")
