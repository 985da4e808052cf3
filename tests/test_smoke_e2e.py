"""The smoke test end to end: the real CLI in a subprocess, real TensorFlow on logical CPU devices."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import hosts
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
    # many all-reduces per traced call: the per-operation time is the call's, divided by its count
    assert bandwidth["iterations"] == bandwidth["per_call"] * bandwidth["calls"] > bandwidth["calls"]
    assert smoke["cross_device_ops"]["class"] == "CollectiveAllReduce"
    assert smoke["cross_device_ops"]["requested"] == "tensorflow"  # not WSL2: TensorFlow's own choice
    assert smoke["child"]["exit_status"] == 0 and not smoke["child"]["timed_out"]
    assert Path(smoke["log"]["path"]).parent.parent == tmp_path and smoke["log"]["tail"]
    # AutoGraph's generated modules stay in the child's own folder, not in $TMPDIR (tmp_path here)
    assert not list(tmp_path.glob("__autograph_generated_file*"))
    statuses = {c["id"]: c["status"] for c in report["checks"] if c["id"].startswith("smoke.")}
    assert set(statuses.values()) == {"pass"}, statuses
    assert_nothing_left(report)


@pytest.mark.slow
def test_wsl2_gets_hierarchical_copy_and_the_same_table(tmp_path: Path) -> None:
    """Under WSL2 (a --root host tree) MirroredStrategy really is built with HierarchicalCopyAllReduce, the
    report says which and why, and the reference table stays digit for digit."""
    host = hosts.wsl2(tmp_path / "wsl2-host")
    done, report = validate(tmp_path, "--cpu-replicas", "2", "--root", str(host.root))
    assert done.returncode == 0, done.stderr
    assert epoch_metrics(done.stdout) == epoch_metrics(REFERENCE_OUTPUT)
    assert done.stdout.splitlines()[-1] == "final_val_binary_accuracy=0.9609"
    ops = report["smoke"]["cross_device_ops"]
    assert (ops["class"], ops["requested"]) == ("HierarchicalCopyAllReduce", "hierarchical-copy")
    assert ops["why"].startswith("auto under WSL2")
    strategy = checks_by_id(report)["smoke.strategy"]
    assert "all-reduce: hierarchical copy (auto under WSL2: NCCL's multi-GPU support" in strategy["summary"]
    assert report["smoke"]["allreduce"]["ok"] and report["smoke"]["sync"]["ok"]


@pytest.mark.slow
def test_wsl2_with_an_odd_count_gets_reduction_to_one_device(tmp_path: Path) -> None:
    """HierarchicalCopyAllReduce leaves one of 3 replicas out of the sum (test_cross_device.py), so "auto"
    under WSL2 takes ReductionToOneDevice for 3; the exact all-reduce proves the sum right."""
    host = hosts.wsl2(tmp_path / "wsl2-host")
    done, report = validate(tmp_path, "--cpu-replicas", "3", "--root", str(host.root))
    assert done.returncode == 0, done.stderr
    ops = report["smoke"]["cross_device_ops"]
    assert (ops["class"], ops["requested"]) == ("ReductionToOneDevice", "reduce-to-one-device")
    assert report["smoke"]["allreduce"]["ok"]


@pytest.mark.slow
def test_hierarchical_copy_on_an_odd_count_is_caught_and_explained(tmp_path: Path) -> None:
    """Asked for anyway on 3 replicas: the exact all-reduce catches TensorFlow's wrong sum (42), and the hint
    names the cause and the way out."""
    done, report = validate(tmp_path, "--cpu-replicas", "3", "--cross-device-ops", "hierarchical-copy")
    assert done.returncode == 42, done.stderr
    check = checks_by_id(report)["smoke.allreduce_exact"]
    assert (check["status"], check["code"]) == ("fail", 42)
    assert "leaves one replica out of the sum" in check["hint"] and "reduce-to-one-device" in check["hint"]
    assert "beware" in report["smoke"]["cross_device_ops"]["why"]


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


def smoke_children(parent: int) -> list[int]:
    """The validator's TensorFlow child: started in a session of its own, so each leads its process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # state, ppid, pgrp, ...
        if fields[1] == str(parent) and b"tfdist_validate.smoke.child" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_a_run_past_the_deadline_is_50_and_leaves_no_process(tmp_path: Path, deadline_scale: float) -> None:
    """Wherever the deadline lands, the run ends in 50 naming the stage it cut, the report keeps the last
    lines the child printed (the same lines, in the same order, as were relayed live) and no process is left.

    Nothing here depends on how far the run gets in the time: once the child has printed more lines than the
    report keeps, the test freezes it (SIGSTOP, as a hung collective would), so a fast machine cannot finish
    500 epochs first; on a slow machine (or with `--deadline-scale 0.25`) the deadline may cut TensorFlow's
    import instead, which is 50 too."""
    timeout = 8 * deadline_scale
    report_path = tmp_path / "report.json"
    options = ["--cpu-replicas", "2", "--epochs", "500", "--timeout", f"{timeout:g}"]
    with (tmp_path / "stderr.txt").open("w") as stderr:
        proc = subprocess.Popen(
            [*_cli(), "run", "--json", str(report_path), *options],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=_env(tmp_path),
        )
    guard = threading.Timer(timeout + 240, proc.kill)  # never hang the suite; not part of what is tested
    guard.start()
    relayed: list[str] = []
    frozen: list[int] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            relayed.append(line.rstrip("\n"))
            if not frozen and len(relayed) > OUTPUT_TAIL_LINES + 10:
                frozen = smoke_children(proc.pid)
                for pid in frozen:
                    os.killpg(pid, signal.SIGSTOP)
        proc.wait(timeout=60)
    finally:
        guard.cancel()
    report = json.loads(report_path.read_text())
    jsonschema.validate(report, json.loads(run_cli(["schema"]).stdout), cls=jsonschema.Draft202012Validator)
    assert proc.returncode == report["verdict"]["code"] == 50
    verdict = report["verdict"]
    # our deadline fired and named the stage it cut, not the whole-run watchdog's hard exit five seconds later
    assert "did not finish" in verdict["summary"] and "exceeded --timeout" not in verdict["summary"], verdict
    printed = [line for line in relayed if not line.startswith("visible_gpus=")]  # the child's lines only
    if verdict["check"] == "tensorflow.import":  # the deadline came before TensorFlow had imported
        assert report["tensorflow"]["timed_out"] and report["smoke"] is None and printed == []
    else:
        assert verdict["check"].startswith("smoke."), verdict
        child = report["smoke"]["child"]
        assert child["timed_out"] and child["exit"] == "killed by SIGKILL"
        tail = report["smoke"]["output_tail"]
        assert checks_by_id(report)[verdict["check"]]["details"]["output_tail"] == tail
        assert tail == printed[-OUTPUT_TAIL_LINES:]  # the last lines printed, in order, also seen live
        if len(relayed) > OUTPUT_TAIL_LINES + 10:  # it printed more than the report keeps, and was frozen
            assert frozen and len(printed) > len(tail) == OUTPUT_TAIL_LINES
        assert_nothing_left(report)
    assert our_processes(str(tmp_path)) == []  # the child's files live under TMPDIR = tmp_path


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
    assert smoke["visible_gpus"] == []  # a dry run hides every GPU before the runtime starts
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


class _Lines(io.StringIO):
    """An output stream that shows each write to `seen` as it happens, from whichever thread writes it."""

    def __init__(self, seen: Callable[[str], None]) -> None:
        super().__init__()
        self.seen = seen

    def write(self, text: str) -> int:
        self.seen(text)
        return super().write(text)


@pytest.mark.slow
@pytest.mark.parametrize("json_to_stdout", [False, True], ids=["human", "json-to-stdout"])
def test_a_slow_stage_shows_a_heartbeat_on_stderr_and_never_on_stdout(
    tmp_path: Path, json_to_stdout: bool
) -> None:
    """The real run on 2 logical CPUs, made slow for certain: when training starts (its `Epoch 1/` line), the
    test freezes the child, and thaws it only once the heartbeat named the stage. So the stage lasts until the
    heartbeat is seen, on any machine; the guard below is hang protection, not part of what is tested."""
    from tfdist_validate import app, settings
    from tfdist_validate.report.heartbeat import HeartbeatTiming

    frozen: list[int] = []
    heartbeat_seen = threading.Event()

    def watch(text: str) -> None:
        if text.startswith("Epoch 1/") and not frozen:
            frozen.extend(smoke_children(os.getpid()))
            for pid in frozen:
                os.killpg(pid, signal.SIGSTOP)
        if text.startswith("smoke.training: still running after") and frozen and not heartbeat_seen.is_set():
            heartbeat_seen.set()
            thaw()

    def thaw() -> None:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGCONT)

    stdout, stderr = _Lines(watch), _Lines(watch)
    env = _env(tmp_path)
    given = {"cpu_replicas": "2", "json": "-" if json_to_stdout else str(tmp_path / "report.json")}
    resolved = settings.resolve(given, env)
    guard = threading.Timer(240, thaw)  # a heartbeat that never comes fails the asserts below, not the suite
    guard.start()
    try:
        timing = HeartbeatTiming(after_s=0.0, every_s=0.05)  # beat at once: the frozen child waits for it
        code = app.execute("run", resolved, env, stdout=stdout, stderr=stderr, heartbeat=timing)
    finally:
        guard.cancel()
        thaw()
    err, out = stderr.getvalue(), stdout.getvalue()
    assert code == 0, err
    assert frozen and heartbeat_seen.is_set(), err
    training = [line for line in err.splitlines() if line.startswith("smoke.training: still running")]
    # a dry run trains on CPUs: no JIT, no peers to wait for, so the beat says the deadline and nothing else
    assert training and all(
        re.fullmatch(r"smoke\.training: still running after \d+s \(deadline 10m\)", b) for b in training
    ), training
    last_beat = max(i for i, line in enumerate(err.splitlines()) if "still running after" in line)
    verdict_at = next(i for i, line in enumerate(err.splitlines()) if line.startswith("verdict: "))
    assert last_beat < verdict_at  # never after the verdict
    assert "still running" not in out
    if json_to_stdout:
        assert json.loads(out)["verdict"]["code"] == 0  # stdout is the report and nothing else
    else:
        assert "final_val_binary_accuracy=0.9609" in out.splitlines()
