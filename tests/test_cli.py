"""The CLI surface: verbs, default command, help, and the whole-run watchdog / signal handling of app.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import clean_env, run_cli
from tfdist_validate.cli import COMMANDS, build_parser


def test_help_lists_every_contract_command() -> None:
    result = run_cli(["--help"])
    assert result.code == 0
    for command in COMMANDS:
        assert command in result.stdout


def test_version() -> None:
    result = run_cli(["--version"])
    assert result.code == 0 and result.stdout.startswith("tfdist-validate ")


def test_run_and_check_accept_every_option() -> None:
    parser = build_parser()
    args = parser.parse_args(["check", "--min-gpus", "3", "--devices", "0,1", "--fail-on-health"])
    assert (args.min_gpus, args.devices, args.fail_on_health) == ("3", "0,1", "true")


def test_options_without_a_command_mean_run() -> None:
    from tfdist_validate.cli import _with_default_command

    assert _with_default_command([]) == ["run"]
    assert _with_default_command(["--cpu-replicas", "2"]) == ["run", "--cpu-replicas", "2"]
    assert _with_default_command(["--help"]) == ["--help"]


def test_unknown_command_is_a_usage_error() -> None:
    result = run_cli(["frobnicate"])
    assert result.code == 2 and len(result.stderr.splitlines()) == 1


# A validator whose only check hangs: the hard watchdog / the signal handler must still produce a report.
HANGING = textwrap.dedent(
    """
    import sys, time
    from tfdist_validate import pipeline
    from tfdist_validate.result import Layer, passed
    from tfdist_validate.runner import Check

    def hang(ctx):
        print("hanging", flush=True)
        time.sleep(3600)
        return passed("never")

    pipeline.build = lambda command: [Check("demo.hang", Layer.DRIVER, hang)]
    from tfdist_validate.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _start_hanging(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HANGING, "check", "--json", str(tmp_path / "r.json"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env({"TFDIST_TERMINATION_LOG": str(tmp_path / "t.log")}),
    )


def test_a_stuck_main_thread_ends_in_50_with_a_report(tmp_path: Path, deadline_scale: float) -> None:
    timeout = f"{1 * deadline_scale:g}"
    proc = _start_hanging(tmp_path, "--timeout", timeout)
    _out, err = proc.communicate(timeout=120)  # hang protection only: the check never returns by itself
    assert proc.returncode == 50
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"]["name"] == "TIMEOUT" and report["verdict"]["check"] == "demo.hang"
    assert f"exceeded --timeout {timeout} s" in err


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_still_writes_the_report(tmp_path: Path, stop: signal.Signals) -> None:
    proc = _start_hanging(tmp_path, "--timeout", "120")
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "hanging"  # the event: the check is running
    os.kill(proc.pid, stop)
    proc.communicate(timeout=30)
    assert proc.returncode == 50
    report = json.loads((tmp_path / "r.json").read_text())
    assert f"stopped by {stop.name}" in report["verdict"]["summary"]
    assert f"stopped by {stop.name}" in (tmp_path / "t.log").read_text()
