"""The smoke test end to end: the real CLI in a subprocess, real TensorFlow on logical CPU devices."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import clean_env, run_cli
from tfdist_validate.smoke.process import group_members
from tfdist_validate.smoke.run import DRY_RUN_ALLREDUCE_MIB, OUTPUT_TAIL_LINES

# Step 4 of ../shared/seeds/000_c0d78176e4a2ffdd.txt, verbatim (long lines split): the output on 2 GPUs.
REFERENCE_OUTPUT = "\n".join(
    [
        "visible_gpus=2",
        "replicas=2",
        "global_batch=32",
        "Epoch 1/3",
        "16/16 - 1s - 40ms/step - binary_accuracy: 0.7930 - loss: 0.4713"
        " - val_binary_accuracy: 0.8750 - val_loss: 0.2806",
        "Epoch 2/3",
        "16/16 - 0s - 13ms/step - binary_accuracy: 0.9570 - loss: 0.1509"
        " - val_binary_accuracy: 0.9219 - val_loss: 0.1358",
        "Epoch 3/3",
        "16/16 - 0s - 13ms/step - binary_accuracy: 0.9727 - loss: 0.0716"
        " - val_binary_accuracy: 0.9609 - val_loss: 0.0717",
        "final_val_binary_accuracy=0.9609",
    ]
)
# Keras' verbose=2 epoch line; the timings differ from machine to machine, the metrics must not.
EPOCH_LINE = re.compile(
    r"^(?P<steps>\d+/\d+) - \d+m?s - \d+m?s/step - binary_accuracy: (?P<acc>[\d.]+) - loss: (?P<loss>[\d.]+)"
    r" - val_binary_accuracy: (?P<val_acc>[\d.]+) - val_loss: (?P<val_loss>[\d.]+)$"
)


def epoch_metrics(output: str) -> list[tuple[str, ...]]:
    found = [EPOCH_LINE.match(line) for line in output.splitlines()]
    return [(m["steps"], m["acc"], m["loss"], m["val_acc"], m["val_loss"]) for m in found if m]


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "tfdist-validate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tfdist_validate"]


def _env(tmp_path: Path) -> dict[str, str]:
    # TMPDIR: the child's log folder lands in the test's own directory
    return clean_env({"TMPDIR": str(tmp_path), "TFDIST_TERMINATION_LOG": str(tmp_path / "termination.log")})


def validate(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [*_cli(), "run", "--json", str(report_path), *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
        check=False,
    )
    report = json.loads(report_path.read_text())
    schema = json.loads(run_cli(["schema"]).stdout)
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
    assert report["verdict"]["code"] == done.returncode, done.stderr
    return done, report


def our_processes(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (the child's unique results path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def assert_nothing_left(report: dict[str, Any]) -> None:
    child = report["smoke"]["child"]
    assert child["leftover_pids"] == []
    assert group_members(child["pid"]) == []
    assert our_processes(child["results_path"]) == []


def checks_by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}


@pytest.mark.slow
def test_two_cpu_replicas_reproduce_the_reference_table(tmp_path: Path) -> None:
    done, report = validate(tmp_path, "--cpu-replicas", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("replicas=2") == 1 and lines.count("global_batch=32") == 1
    assert sum(line.startswith("visible_gpus=") for line in lines) == 1  # devices.count's line, not twice
    assert [line for line in lines if line.startswith("Epoch ")] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    assert epoch_metrics(done.stdout) == epoch_metrics(REFERENCE_OUTPUT)
    assert len(epoch_metrics(done.stdout)) == 3
    assert lines[-1] == "final_val_binary_accuracy=0.9609"

    smoke = report["smoke"]
    assert (smoke["replicas"], smoke["global_batch"], smoke["per_replica_batch"]) == (2, 32, 16)
    assert [d.rsplit("device:", 1)[1] for d in smoke["devices"]] == ["CPU:0", "CPU:1"]
    assert [
        (
            f"{e['binary_accuracy']:.4f}",
            f"{e['loss']:.4f}",
            f"{e['val_binary_accuracy']:.4f}",
            f"{e['val_loss']:.4f}",
        )
        for e in smoke["epochs"]
    ] == [m[1:] for m in epoch_metrics(REFERENCE_OUTPUT)]
    assert smoke["final_val_binary_accuracy"] == 0.9609375
    assert smoke["step_time_s"] > 0
    assert smoke["sync"]["ok"] and smoke["sync"]["variables_checked"] > 0
    assert smoke["allreduce"]["first_values"] == [0.75, 0.75]
    bandwidth = smoke["bandwidth"]
    assert bandwidth["size_bytes"] == DRY_RUN_ALLREDUCE_MIB * 2**20  # a dry run's default size
    assert bandwidth["busbw_gbps"] == pytest.approx(bandwidth["algbw_gbps"])  # 2(n-1)/n = 1 for n = 2
    assert smoke["cross_device_ops"]["class"] == "CollectiveAllReduce"
    assert smoke["child"]["exit_status"] == 0 and not smoke["child"]["timed_out"]
    assert Path(smoke["log"]["path"]).parent.parent == tmp_path and smoke["log"]["tail"]
    statuses = {c["id"]: c["status"] for c in report["checks"] if c["id"].startswith("smoke.")}
    assert set(statuses.values()) == {"pass"}, statuses
    assert_nothing_left(report)


@pytest.mark.slow
def test_accuracy_and_bandwidth_floors(tmp_path: Path) -> None:
    done, report = validate(
        tmp_path, "--cpu-replicas", "2", "--min-val-accuracy", "0.99", "--min-busbw-gbps", "1e5"
    )
    assert done.returncode == 42
    checks = checks_by_id(report)
    assert (checks["smoke.accuracy"]["status"], checks["smoke.accuracy"]["code"]) == ("fail", 42)
    assert (
        checks["smoke.accuracy"]["summary"]
        == "final val_binary_accuracy 0.9609 is below --min-val-accuracy 0.99"
    )
    # the less fundamental failure is still reported, with its own code
    assert (checks["smoke.allreduce_bandwidth"]["status"], checks["smoke.allreduce_bandwidth"]["code"]) == (
        "fail",
        43,
    )
    assert report["verdict"]["check"] == "smoke.accuracy"


@pytest.mark.slow
def test_a_run_past_the_deadline_is_50_and_leaves_no_process(tmp_path: Path) -> None:
    done, report = validate(tmp_path, "--cpu-replicas", "2", "--epochs", "500", "--timeout", "8")
    assert done.returncode == 50
    verdict = report["verdict"]
    # our deadline fired, not the whole-run watchdog's hard exit five seconds later
    assert verdict["check"].startswith("smoke.") and "did not finish" in verdict["summary"], verdict
    child = report["smoke"]["child"]
    assert child["timed_out"] and child["exit"] == "killed by SIGKILL"
    failing = checks_by_id(report)[verdict["check"]]
    assert failing["details"]["output_tail"] == report["smoke"]["output_tail"]
    # what the child printed so far, live and (its last OUTPUT_TAIL_LINES lines: how many epochs fit in
    # the deadline depends on the machine) in the report
    relayed = [line for line in done.stdout.splitlines() if not line.startswith("visible_gpus=")]
    tail = report["smoke"]["output_tail"]
    assert relayed and tail == relayed[-OUTPUT_TAIL_LINES:]
    assert_nothing_left(report)


@pytest.mark.slow
def test_sigterm_mid_training_writes_the_report_and_leaves_no_orphan(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    proc = subprocess.Popen(
        [
            *_cli(),
            "run",
            "--json",
            str(report_path),
            "--cpu-replicas",
            "2",
            "--epochs",
            "500",
            "--timeout",
            "300",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    watchdog = threading.Timer(240, proc.kill)  # never hang the suite if training never starts
    watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("Epoch 1/500"):
                break
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        watchdog.cancel()
    assert proc.returncode == 50
    report = json.loads(report_path.read_text())
    assert "stopped by SIGTERM" in report["verdict"]["summary"]
    assert report["smoke"]["child"]["interrupted"]
    assert report["smoke"]["child"]["exit"] == "killed by SIGKILL"
    assert_nothing_left(report)


@pytest.mark.slow
def test_devices_restrict_the_strategy_and_one_replica_passes_with_a_warning(tmp_path: Path) -> None:
    done, report = validate(tmp_path, "--cpu-replicas", "2", "--devices", "/cpu:1", "--min-gpus", "1")
    assert done.returncode == 0, done.stderr
    assert "replicas=1" in done.stdout.splitlines() and "global_batch=16" in done.stdout.splitlines()
    smoke = report["smoke"]
    assert smoke["replicas"] == 1 and smoke["devices"][0].endswith("device:CPU:1")
    checks = checks_by_id(report)
    assert checks["devices.count"]["status"] == "warn"
    assert checks["smoke.replicas_in_sync"]["status"] == "pass"
    assert checks["smoke.allreduce_bandwidth"]["status"] == "skip"  # one replica moves no data


def test_too_few_replicas_is_30_and_starts_no_training(tmp_path: Path) -> None:
    done, report = validate(tmp_path, "--cpu-replicas", "1", "--min-gpus", "2")
    assert done.returncode == 30
    assert report["verdict"]["check"] == "devices.count"
    assert report["smoke"] is None  # no child was started
    assert all(c["blocked_by"] for c in report["checks"] if c["id"].startswith("smoke."))
