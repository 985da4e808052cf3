"""TF_CONFIG: every mistake is exit 2 naming the field; the cluster layer counts workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hosts
from conftest import run_cli
from tfdist_validate.cluster.tf_config import parse
from tfdist_validate.errors import UsageError

TWO = {"cluster": {"worker": ["127.0.0.1:20001", "127.0.0.1:20002"]}, "task": {"type": "worker", "index": 1}}


def test_two_workers() -> None:
    cfg = parse(json.dumps(TWO))
    assert (cfg.is_multi_worker, cfg.num_workers, cfg.task_name, cfg.address) == (
        True,
        2,
        "worker:1",
        "127.0.0.1:20002",
    )
    assert cfg.peers == [("worker:0", "127.0.0.1:20001")]


def test_chief_counts_as_a_worker_and_comes_first() -> None:
    cfg = parse(json.dumps({"cluster": {"worker": ["b:1"], "chief": ["a:1"]}, "task": {"type": "chief"}}))
    assert [t[0] for t in cfg.training_tasks] == ["chief", "worker"] and cfg.num_workers == 2


def test_ipv6_and_string_index() -> None:
    cfg = parse(
        '{"cluster": {"worker": ["[::1]:2222", "[::1]:2223"]}, "task": {"type": "worker", "index": "1"}}'
    )
    assert cfg.address == "[::1]:2223"


BAD = {
    "not json": ("{cluster:", "TF_CONFIG: not valid JSON: "),
    "not an object": ("[1, 2]", "TF_CONFIG: expected a JSON object"),
    "no cluster": ('{"task": {"type": "worker", "index": 0}}', "TF_CONFIG: cluster: missing"),
    "no task": ('{"cluster": {"worker": ["a:1", "b:2"]}}', "TF_CONFIG: task: missing"),
    "index out of range": (
        '{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 2}}',
        "TF_CONFIG: task.index: 2 is out of range; cluster.worker has 2 entries",
    ),
    "negative index": (
        '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}}',
        "TF_CONFIG: task.index: -1 is out of range",
    ),
    "index not a number": (
        '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "first"}}',
        "TF_CONFIG: task.index: 'first' is not an integer",
    ),
    "port not a number": (
        '{"cluster": {"worker": ["a:1", "b:http"]}, "task": {"type": "worker", "index": 0}}',
        "TF_CONFIG: cluster.worker[1]: port 'http' of 'b:http' is not a number",
    ),
    "no port": (
        '{"cluster": {"worker": ["hostonly"]}, "task": {"type": "worker", "index": 0}}',
        "TF_CONFIG: cluster.worker[0]: 'hostonly' is not host:port",
    ),
    "task type not in cluster": (
        '{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}',
        "TF_CONFIG: task.type: 'chief' is not a job of the cluster",
    ),
    "unknown job": (
        '{"cluster": {"wrker": ["a:1"]}, "task": {}}',
        "TF_CONFIG: cluster.wrker: unknown job type",
    ),
    "addresses not a list": (
        '{"cluster": {"worker": "a:1,b:2"}, "task": {"type": "worker"}}',
        "TF_CONFIG: cluster.worker: expected a list",
    ),
}


@pytest.mark.parametrize(("text", "message"), BAD.values(), ids=BAD.keys())
def test_bad_tf_config_names_the_field(text: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse(text)
    assert str(err.value).startswith(message)


def test_bad_tf_config_is_exit_2_through_the_cli() -> None:
    result = run_cli(["check"], {"TF_CONFIG": BAD["port not a number"][0]})
    assert result.code == 2
    assert result.stderr.startswith("tfdist-validate: error: TF_CONFIG: cluster.worker[1]: port 'http'")
    assert len(result.stderr.splitlines()) == 1


def _cluster_check(env: dict[str, str], *args: str) -> tuple[int, dict[str, object]]:
    result = run_cli(["check", "--json", "-", *args], env)
    report = json.loads(result.stdout)
    (check,) = [c for c in report["checks"] if c["id"] == "cluster.tf_config"]
    return result.code, check


def test_min_workers_without_a_cluster_is_30() -> None:
    _code, check = _cluster_check({}, "--min-workers", "2")
    assert check["status"] == "fail" and check["code"] == 30
    assert "--min-workers 2, but TF_CONFIG is not set" in check["summary"]


def test_cluster_smaller_than_min_workers_is_30() -> None:
    _code, check = _cluster_check({"TF_CONFIG": json.dumps(TWO)}, "--min-workers", "3")
    assert check["code"] == 30 and "names 2 workers, fewer than --min-workers 3" in check["summary"]


def test_single_host_is_not_applicable() -> None:
    _code, check = _cluster_check({})
    assert check["status"] == "skip" and "single host" in check["summary"]


def test_report_names_the_worker_and_the_cluster() -> None:
    result = run_cli(["check", "--json", "-"], {"TF_CONFIG": json.dumps(TWO)})
    cluster = json.loads(result.stdout)["cluster"]
    assert cluster["task"] == {"type": "worker", "index": 1, "address": "127.0.0.1:20002"}
    assert cluster["cluster"] == TWO["cluster"] and cluster["workers"] == 2


@pytest.mark.parametrize("asked", ["1", "2"])
def test_cpu_replicas_above_one_in_a_cluster_warns_what_tensorflow_does(asked: str, tmp_path: Path) -> None:
    host = hosts.docker_without_gpus(tmp_path / "root")
    host.env["TF_CONFIG"] = json.dumps(TWO)
    result = hosts.run_check(host, hosts.probes(), tmp_path, cpu_replicas=asked)
    assert result.code == 0
    check = result.check("devices.count")
    assert result.report["host"]["replicas_planned"] == 2
    if asked == "1":
        assert check["status"] == "pass"
        assert check["summary"].startswith("1 local replica(s) x 2 workers = 2 replicas planned")
        return
    assert check["status"] == "warn"
    assert check["summary"] == (
        "--cpu-replicas 2 gives this worker 1 replica, not 2: TensorFlow's MultiWorkerMirroredStrategy uses"
        " one CPU device per worker; 1 local replica(s) x 2 workers = 2 replicas (this is worker:1)"
    )
    assert "--cpu-replicas 1" in check["hint"]
