"""Multi-worker validation for real: several `tfdist-validate run` processes on loopback ports, joined by
TF_CONFIG into one MultiWorkerMirroredStrategy cluster on TensorFlow's own collectives."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import clean_env, run_cli
from test_smoke_e2e import REFERENCE_OUTPUT, epoch_metrics, validate
from tfdist_validate.diagnose import diagnose_file
from tfdist_validate.report.schema import SCHEMA

pytestmark = pytest.mark.slow


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def tf_config(ports: list[int], index: int) -> str:
    workers = [f"127.0.0.1:{p}" for p in ports]
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


_RUN = (sys.executable, "-m", "tfdist_validate", "run", "--cpu-replicas", "1")


def start_worker(
    tmp_path: Path, ports: list[int], index: int, *args: str, timeout: int = 240
) -> subprocess.Popen[str]:
    report = str(tmp_path / f"worker{index}.json")
    return subprocess.Popen(
        [*_RUN, "--timeout", str(timeout), "--json", report, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env({"TF_CONFIG": tf_config(ports, index), "TFDIST_TERMINATION_LOG": "/dev/null"}),
        start_new_session=True,  # so a test can kill a worker with everything it started
    )


def reported_table(report: dict[str, Any]) -> list[tuple[str, ...]]:
    """The report's epoch metrics as the epoch lines print them (epoch_metrics' tuples, less the steps)."""
    keys = ("binary_accuracy", "loss", "val_binary_accuracy", "val_loss")
    return [tuple(f"{epoch[key]:.4f}" for key in keys) for epoch in report["smoke"]["epochs"]]


def test_two_workers_on_loopback_print_the_reference_table(tmp_path: Path) -> None:
    ports = free_ports(2)
    # worker 1 asks for 2 CPU replicas, as a user coming from single-host runs might: it gets a warning,
    # and the cluster still has one replica per worker
    workers = [start_worker(tmp_path, ports, 0), start_worker(tmp_path, ports, 1, "--cpu-replicas", "2")]
    outputs = [w.communicate(timeout=300) for w in workers]
    for index, (worker, (out, err)) in enumerate(zip(workers, outputs, strict=True)):
        assert worker.returncode == 0, err
        assert "replicas=2\n" in out and "global_batch=32\n" in out
        # the same global batches, rows per replica, loss scaling and seed as the reference: its table
        assert epoch_metrics(out) == epoch_metrics(REFERENCE_OUTPUT)
        assert out.splitlines()[-1] == "final_val_binary_accuracy=0.9609"
        report = json.loads((tmp_path / f"worker{index}.json").read_text())
        jsonschema.validate(report, SCHEMA)
        assert report["verdict"]["code"] == 0
        assert reported_table(report) == [m[1:] for m in epoch_metrics(REFERENCE_OUTPUT)]
        assert report["cluster"]["task"] == {
            "type": "worker",
            "index": index,
            "address": f"127.0.0.1:{ports[index]}",
        }
        assert report["cluster"]["cluster"] == {"worker": [f"127.0.0.1:{p}" for p in ports]}
        checks = {c["id"]: c for c in report["checks"]}
        assert checks["smoke.strategy"]["details"]["workers"] == 2
        assert checks["smoke.strategy"]["details"]["task"] == f"worker:{index}"
        assert checks["smoke.strategy"]["details"]["local_replicas"] == 1
        # the exact all-reduce covers the cross-worker sum: replica ids 0 and 1 contribute 1x and 2x the
        # pattern (first element 0.25), so this worker's one local replica must receive 0.75
        exact = checks["smoke.allreduce_exact"]["details"]
        assert exact["ok"] and exact["replicas"] == 2
        assert exact["first_values"] == [exact["expected_first"]] == [0.75]
        assert checks["smoke.replicas_in_sync"]["status"] == "pass"
    statuses = [
        {c["id"]: c["status"] for c in json.loads((tmp_path / f"worker{i}.json").read_text())["checks"]}
        for i in range(2)
    ]
    assert (statuses[0]["devices.count"], statuses[1]["devices.count"]) == ("pass", "warn")


def test_three_workers_print_the_table_of_a_single_host_run_on_three_replicas(tmp_path: Path) -> None:
    (tmp_path / "single").mkdir()
    single, _report = validate(tmp_path / "single", "--cpu-replicas", "3")
    assert single.returncode == 0, single.stderr
    table = epoch_metrics(single.stdout)
    # 3 replicas: global batch 48, so both passes end in a partial batch (32 rows: 11, 11, 10 per replica)
    assert len(table) == 3 and table[0][0] == "11/11" and table != epoch_metrics(REFERENCE_OUTPUT)
    final = single.stdout.splitlines()[-1]
    ports = free_ports(3)
    workers = [start_worker(tmp_path, ports, i) for i in range(3)]
    outputs = [w.communicate(timeout=300) for w in workers]
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
        assert "replicas=3\n" in out and "global_batch=48\n" in out
        assert epoch_metrics(out) == table
        assert out.splitlines()[-1] == final


def test_a_peer_that_never_starts_is_named_within_the_timeout(tmp_path: Path, deadline_scale: float) -> None:
    """A lone worker waits for its peer until its deadline, whatever the machine's speed, and then names it.

    Wall-clock time is not measured: the report says which deadline ended the run (the child's, not the
    watchdog's hard exit). Only if the deadline came before TensorFlow had even imported (a very slow machine,
    or `--deadline-scale 0.25`) is there no collective to blame on the peer; that is 50 at the import."""
    ports = free_ports(2)
    timeout = round(25 * deadline_scale)
    lone = start_worker(tmp_path, ports, 0, timeout=timeout)
    _out, err = lone.communicate(timeout=timeout + 240)  # hang protection only
    report = json.loads((tmp_path / "worker0.json").read_text())
    verdict = report["verdict"]
    assert lone.returncode == verdict["code"] and lone.returncode in (40, 50), err
    assert "exceeded --timeout" not in verdict["summary"]  # not the watchdog's last resort
    if verdict["check"] == "tensorflow.import":
        assert lone.returncode == 50 and report["tensorflow"]["timed_out"], verdict
        return
    assert verdict["check"].startswith("smoke."), verdict
    assert report["smoke"]["child"]["leftover_pids"] == []
    assert f"unreachable from worker:0: worker:1 at 127.0.0.1:{ports[1]}" in err
    assert f"worker:1 at 127.0.0.1:{ports[1]}" in verdict["summary"]


def test_a_peer_dying_mid_run_fails_the_survivor_with_40(tmp_path: Path) -> None:
    ports = free_ports(2)
    # The victim is worker 0, which hosts TensorFlow's coordination service: the survivor's next collective
    # then meets a refused connection at once. (Killing worker 1 relies on worker 0 noticing its missing
    # heartbeats, which on a loaded 2-core machine sometimes came only after the deadline: 50, not 40.)
    victim = start_worker(tmp_path, ports, 0, "--epochs", "500", timeout=120)
    survivor = start_worker(tmp_path, ports, 1, "--epochs", "500", timeout=120)
    assert victim.stdout is not None
    for line in victim.stdout:  # wait until training is under way on the victim
        if line.startswith("Epoch 2/"):
            break
    os.killpg(victim.pid, signal.SIGKILL)
    victim.communicate(timeout=30)
    _out, err = survivor.communicate(timeout=150)
    assert survivor.returncode == 40, err
    assert f"worker:0 at 127.0.0.1:{ports[0]}" in err
    # `diagnose` on the smoke test's own log names the same code `run` returned, and run used it
    report = json.loads((tmp_path / "worker1.json").read_text())
    assert diagnose_file(report["smoke"]["log"]["path"]).code == survivor.returncode
    (training,) = [c for c in report["checks"] if c["id"] == "smoke.training"]
    assert training["details"]["diagnosis"][0]["id"] == "multiworker-peer-unreachable"
    assert "the log shows: a worker of the multi-worker cluster is unreachable" in training["summary"]
    # the same through the command a user runs on that log
    result = run_cli(["diagnose", report["smoke"]["log"]["path"]])
    assert result.code == survivor.returncode and "cpu dry run" in result.stdout.lower()
