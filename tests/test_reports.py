"""Reports: the JSON report against its schema, the human summary verbatim, the termination message."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from conftest import clean_env, run_cli
from tfdist_validate import pipeline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.report import termination
from tfdist_validate.report.files import write_output
from tfdist_validate.report.human import HumanReport, use_colour
from tfdist_validate.report.schema import SCHEMA
from tfdist_validate.result import CheckResult, Layer, Outcome, failed, passed, skipped, warned
from tfdist_validate.runner import Check
from tfdist_validate.verdict import Verdict, decide


def validate(report: dict[str, object]) -> None:
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(report)


def test_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_schema_command_prints_the_schema() -> None:
    result = run_cli(["schema"])
    assert result.code == 0 and json.loads(result.stdout) == json.loads(json.dumps(SCHEMA))


def test_check_report_on_this_machine_validates_and_matches_exit_code(tmp_path: Path) -> None:
    """The real `check`, as a user runs it, in a subprocess: the report validates and agrees with $?."""
    report_path = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tfdist_validate", "check", "--json", str(report_path)],
        capture_output=True,
        text=True,
        env=clean_env({"TFDIST_TERMINATION_LOG": str(tmp_path / "termination-log")}),
        timeout=300,
    )
    report = json.loads(report_path.read_text())
    validate(report)
    assert report["verdict"]["code"] == proc.returncode
    assert report["verdict"]["name"] == ExitCode(proc.returncode).name
    assert proc.stdout == "" or "visible_gpus=" in proc.stdout  # the human summary is on stderr
    assert f"verdict: {proc.returncode} " in proc.stderr
    message = (tmp_path / "termination-log").read_text()
    assert message.startswith(f"tfdist-validate: exit {proc.returncode} ")
    assert len(message.encode()) <= termination.LIMIT_BYTES


def _fake_pipeline(monkeypatch: pytest.MonkeyPatch, *outcomes: Outcome) -> None:
    layers = list(Layer)
    checks = [Check(f"demo.check{i}", layers[i], lambda _c, o=o: o) for i, o in enumerate(outcomes)]  # type: ignore[misc]
    monkeypatch.setattr(pipeline, "build", lambda command: checks)


def test_json_to_stdout_keeps_stdout_pure_json(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pipeline(monkeypatch, passed("fine"), failed(ExitCode.NO_DRIVER, "no driver", "install it"))
    result = run_cli(["check", "--json", "-"])
    report = json.loads(result.stdout)
    validate(report)
    assert result.code == report["verdict"]["code"] == 10
    assert "FAIL" in result.stderr


def test_report_file_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pipeline(monkeypatch, passed("fine"))
    target = tmp_path / "r.json"
    target.write_text("old")
    assert run_cli(["check", "--json", str(target)]).code == 0
    validate(json.loads(target.read_text()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temp file left behind


def test_report_into_a_missing_folder_is_a_usage_error() -> None:
    result = run_cli(["check", "--json", "/nonexistent/dir/r.json"])
    assert result.code == 2 and "folder '/nonexistent/dir' does not exist" in result.stderr


def test_unwritable_termination_log_does_not_fail_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pipeline(monkeypatch, passed("fine"))
    result = run_cli(["check", "--termination-log", "/proc/version"])
    assert result.code == 0
    assert "note: could not write the termination message to /proc/version" in result.stderr


def test_a_directory_is_never_replaced_by_a_report(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError):
        write_output(tmp_path / "d", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_termination_message_is_bounded_and_one_paragraph() -> None:
    results = [
        CheckResult.from_outcome(f"gpu.{i}", Layer.HEALTH, warned("x" * 50), 0.0) for i in range(200)
    ] + [
        CheckResult.from_outcome(
            "driver.nvml", Layer.DRIVER, failed(ExitCode.NO_DRIVER, "no NVML.", "fix."), 0
        )
    ]
    message = termination.compose(decide(results), results, "/reports/r.json")
    assert len(message.encode()) <= 4096 and "\n" not in message
    assert message.startswith("tfdist-validate: exit 10 NO_DRIVER: no NVML. Fix: fix. Failed: driver.nvml.")


def test_truncation_respects_utf8() -> None:
    text = termination.truncate_utf8("é" * 3000, 4096)
    assert len(text.encode()) <= 4096 and text.endswith("...")


GOLDEN = """\
tfdist-validate 9.9: check
  PASS  runtime.environment          docker container, GPUs injected by the NVIDIA container toolkit
  WARN  health.ecc                   GPU 1: 2 volatile uncorrectable ECC errors
        hint: drain the node and run `nvidia-smi -q -d ECC`
  FAIL  tensorflow.gpus              the driver sees 2 GPUs, TensorFlow sees none
        hint: install the CUDA libraries: pip install 'tensorflow[and-cuda]==2.21.*'
  SKIP  devices.count                not run: needs tensorflow.gpus, which failed
verdict: 22 TF_NO_GPU: the driver sees 2 GPUs, TensorFlow sees none
  fix: install the CUDA libraries: pip install 'tensorflow[and-cuda]==2.21.*'
  report: /tmp/r.json
"""


def test_human_summary_golden() -> None:
    hint = "install the CUDA libraries: pip install 'tensorflow[and-cuda]==2.21.*'"
    outcomes = [
        (
            "runtime.environment",
            Layer.RUNTIME,
            passed("docker container, GPUs injected by the NVIDIA container toolkit"),
        ),
        (
            "health.ecc",
            Layer.HEALTH,
            warned(
                "GPU 1: 2 volatile uncorrectable ECC errors", "drain the node and run `nvidia-smi -q -d ECC`"
            ),
        ),
        (
            "tensorflow.gpus",
            Layer.TENSORFLOW,
            failed(ExitCode.TF_NO_GPU, "the driver sees 2 GPUs, TensorFlow sees none", hint),
        ),
        ("devices.count", Layer.DEVICES, skipped("not run: needs tensorflow.gpus, which failed")),
    ]
    results = [CheckResult.from_outcome(i, layer, o, 0.0) for i, layer, o in outcomes]
    stream = io.StringIO()
    human = HumanReport(stream, colour=False)
    human.header("tfdist-validate", "9.9", "check", "")
    for r in results:
        human.check(r)
    human.verdict(decide(results), "/tmp/r.json")
    assert stream.getvalue() == GOLDEN


def _blocked_results() -> list[CheckResult]:
    """Two independent failures, each with checks that then could not run: the real runner decides which."""
    from tfdist_validate.context import Context, Deadline
    from tfdist_validate.runner import run_checks
    from tfdist_validate.settings import Settings

    hint = "install the driver"
    checks = [
        Check(
            "runtime.gpu_access", Layer.RUNTIME, lambda _c: failed(ExitCode.CONTAINER_NO_GPU, "no GPUs", hint)
        ),
        Check("driver.nvml", Layer.DRIVER, lambda _c: passed("unused"), ("runtime.gpu_access",)),
        Check("health.gpus", Layer.HEALTH, lambda _c: passed("unused"), ("driver.nvml",)),
        Check("tensorflow.import", Layer.TENSORFLOW, lambda _c: 1 / 0),  # type: ignore[arg-type,return-value]
        Check("devices.count", Layer.DEVICES, lambda _c: passed("unused"), ("tensorflow.import",)),
        Check("cluster.tf_config", Layer.CLUSTER, lambda _c: skipped("single host")),
    ]
    ctx = Context(Settings(), "check", {}, Deadline.after(60))
    return run_checks(checks, ctx)


FOLDED = """\
  FAIL  runtime.gpu_access           no GPUs
        hint: install the driver
  CRASH tensorflow.import            the check itself crashed: ZeroDivisionError: division by zero
        hint: this is a bug in tfdist-validate: report it with the file `tfdist-validate bundle` writes
  SKIP  cluster.tf_config            single host
  SKIP  3 checks                     not run because runtime.gpu_access failed and tensorflow.import crashed (-v lists them)
verdict: 11 CONTAINER_NO_GPU: no GPUs
  fix: install the driver
  here: `tfdist-validate run --cpu-replicas 2` validates the software path on this machine (TensorFlow, MirroredStrategy, training on 2 logical CPU devices), not the GPUs, driver or NCCL
"""  # noqa: E501
LISTED = """\
  FAIL  runtime.gpu_access           no GPUs
        hint: install the driver
  SKIP  driver.nvml                  not run: needs runtime.gpu_access, which failed
  SKIP  health.gpus                  not run: needs driver.nvml, which was not run either (because of runtime.gpu_access)
  CRASH tensorflow.import            the check itself crashed: ZeroDivisionError: division by zero
        hint: this is a bug in tfdist-validate: report it with the file `tfdist-validate bundle` writes
  SKIP  devices.count                not run: needs tensorflow.import, which crashed
  SKIP  cluster.tf_config            single host
verdict: 11 CONTAINER_NO_GPU: no GPUs
  fix: install the driver
  here: `tfdist-validate run --cpu-replicas 2` validates the software path on this machine (TensorFlow, MirroredStrategy, training on 2 logical CPU devices), not the GPUs, driver or NCCL
"""  # noqa: E501


@pytest.mark.parametrize(("verbose", "golden"), [(False, FOLDED), (True, LISTED)], ids=["folded", "verbose"])
def test_checks_not_run_are_folded_into_one_line_naming_each_cause(verbose: bool, golden: str) -> None:
    results = _blocked_results()
    stream = io.StringIO()
    human = HumanReport(stream, colour=False, verbose=verbose)
    for r in results:
        human.check(r)
    human.verdict(decide(results), None)
    assert stream.getvalue() == golden


def test_one_check_not_run_is_one_check_and_a_passing_verdict_has_no_dry_run_line() -> None:
    results = [
        CheckResult.from_outcome(
            "a.one", Layer.RUNTIME, failed(ExitCode.TF_NO_GPU, "TensorFlow sees none"), 0
        ),
        replace(
            CheckResult.from_outcome(
                "b.two", Layer.DEVICES, skipped("not run: needs a.one, which failed"), 0
            ),
            blocked_by="a.one",
        ),
    ]
    stream = io.StringIO()
    human = HumanReport(stream, colour=False)
    for r in results:
        human.check(r)
    human.verdict(decide(results), None)
    assert stream.getvalue().splitlines()[1:] == [
        "  SKIP  1 check                      not run because a.one failed (-v lists them)",
        "verdict: 22 TF_NO_GPU: TensorFlow sees none",
    ]  # 22 is not "no GPU here": the GPUs are there, so no dry-run suggestion


@pytest.mark.parametrize("argv", [["check", "-v"], ["check", "--verbose"], ["-v"]])
def test_verbose_is_a_switch_with_a_short_form(argv: list[str]) -> None:
    from tfdist_validate.cli import _with_default_command, build_parser

    assert build_parser().parse_args(_with_default_command(argv)).verbose == "true"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "env", "colour"),
    [(_Tty(), {}, True), (_Tty(), {"NO_COLOR": "1"}, False), (io.StringIO(), {}, False)],
)
def test_colour_only_on_a_tty_and_never_with_no_color(
    stream: io.StringIO, env: dict[str, str], colour: bool
) -> None:
    assert use_colour(stream, env) is colour
    human = HumanReport(stream, use_colour(stream, env))
    human.verdict(Verdict(ExitCode.OK, "fine", "", None), None)
    assert ("\033[" in stream.getvalue()) is colour


def test_the_smoke_records_and_the_report_schema_name_the_same_keys() -> None:
    """smoke/records.py declares each stage's record; the schema must take every key the report copies."""
    from typing import get_type_hints

    from tfdist_validate.report.schema import SCHEMA
    from tfdist_validate.smoke import records

    smoke = SCHEMA["properties"]["smoke"]["anyOf"][1]["properties"]
    for stage, keys in records.REPORTED_KEYS.items():
        declared = get_type_hints(records.RECORDS[stage])
        assert set(keys) <= set(declared) and set(keys) <= set(smoke), stage
    for stage in records.REPORTED_WHOLE:
        assert set(get_type_hints(records.RECORDS[stage])) == set(smoke[stage]["properties"]), stage
