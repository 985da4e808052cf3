"""`replay FILE`: a recorded report decides the same verdict again, from its facts alone.

Every --root scenario of test_host_scenarios.py is run with `check`, its host tree deleted, and its report
replayed: the verdict and each check's status and code must come back. Bad files are exit 2 with one line.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import hosts
from conftest import run_cli
from test_host_scenarios import CASES, Case, _host
from tfdist_validate.report.schema import SCHEMA


def _decided(report: dict[str, Any]) -> tuple[Any, ...]:
    verdict = report["verdict"]
    checks = [(c["id"], c["status"], c["code"]) for c in report["checks"]]
    return verdict["code"], verdict["name"], verdict.get("check"), checks


def _replay(report: Path, tmp_path: Path, *options: str) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "replayed.json"
    result = run_cli(["replay", str(report), "--json", str(out), *options])
    return result.code, json.loads(out.read_text()), result.stderr


def _recorded(case: Case, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    host = _host(case, tmp_path)
    result = hosts.run_check(host, case.probes([]), tmp_path, **case.options)
    shutil.rmtree(host.root)  # the replay has nothing of the host to read
    return tmp_path / "report.json", result.report


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_scenario_replays_to_its_verdict_without_the_host(case: Case, tmp_path: Path) -> None:
    path, report = _recorded(case, tmp_path)
    jsonschema.validate(report, SCHEMA)
    code, replayed, stderr = _replay(path, tmp_path)
    assert code == case.code == report["verdict"]["code"], stderr
    assert _decided(replayed) == _decided(report)
    assert "replay of" in stderr
    jsonschema.validate(replayed, SCHEMA)
    assert replayed["facts"] == report["facts"]  # a replay's report replays too


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def test_options_given_now_decide_over_the_recorded_ones(tmp_path: Path) -> None:
    path, report = _recorded(_case("ECC errors fail with --fail-on-health"), tmp_path)
    assert report["verdict"]["code"] == 31
    assert _replay(path, tmp_path, "--min-gpus", "3")[0] == 31  # recorded --fail-on-health still holds
    path, _ = _recorded(_case("MIG: one device"), tmp_path / "mig")
    assert _replay(path, tmp_path)[0] == 30
    code, replayed, _ = _replay(path, tmp_path, "--min-gpus", "1")
    assert code == 0 and replayed["settings"]["sources"]["min_gpus"] == "--min-gpus"


def test_nvml_that_never_answered_replays_as_the_same_timeout(tmp_path: Path) -> None:
    report = json.loads(
        json.dumps(_recorded(_case("healthy docker host with the toolkit, 2 GPUs"), tmp_path)[1])
    )
    report["facts"]["nvml"]["answer"] = None  # what a hung driver leaves: asked, never answered
    path = tmp_path / "hung.json"
    path.write_text(json.dumps(report))
    code, replayed, _ = _replay(path, tmp_path)
    assert (code, replayed["verdict"]["check"]) == (50, "driver.nvml")


def test_a_bundle_replays(tmp_path: Path) -> None:
    path, report = _recorded(_case("container after systemd daemon-reload"), tmp_path)
    bundle = tmp_path / "tfdist-bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as archive:
        archive.add(path, arcname="tfdist-bundle-x/report.json")
    code, replayed, _ = _replay(bundle, tmp_path)
    assert code == 11 and _decided(replayed) == _decided(report)


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    _, good = _recorded(_case("healthy docker host with the toolkit, 2 GPUs"), tmp_path)
    files: dict[str, bytes] = {
        "garbage": b"\x00\x01not json at all",
        "json, not a report": b'{"hello": "world"}',
        "newer major": json.dumps({**good, "schema_version": "2.0"}).encode(),
        "no facts (an older report)": json.dumps({**good, "facts": None}).encode(),
        "facts of the wrong types": json.dumps({**good, "facts": {**good["facts"], "runtime": [1]}}).encode(),
        "facts of a newer format": json.dumps({**good, "facts": {**good["facts"], "format": 99}}).encode(),
        "gzip, not a tar": gzip.compress(b"report"),
        "diagnose output": b"[]",
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{len(paths)}.json"
        paths[name].write_bytes(data)
    empty = tmp_path / "empty.tar.gz"
    with tarfile.open(empty, "w:gz") as archive:
        info = tarfile.TarInfo("REPORT.md")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"# "))
    paths["bundle without report.json"] = empty
    paths["missing file"] = tmp_path / "nowhere.json"
    return paths


def test_anything_but_a_report_is_exit_2_with_one_line(tmp_path: Path) -> None:
    for name, path in _bad_files(tmp_path).items():
        result = run_cli(["replay", str(path)])
        assert result.code == 2, (name, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tfdist-validate: error: replay: "), (name, lines)


@pytest.mark.slow
def test_a_run_is_judged_again_from_its_recorded_smoke_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One real dry run (2 logical CPU devices); its replays judge the same results under other floors."""
    host = hosts.docker_without_gpus(tmp_path / "root")
    result = hosts.run_check(host, hosts.probes(), tmp_path, "run", cpu_replicas="2")
    assert result.code == 0, result.stderr
    shutil.rmtree(host.root)
    path = tmp_path / "report.json"

    from tfdist_validate import tfsession
    from tfdist_validate.probes import tf_facts

    def no_tensorflow(*_args: object) -> None:
        raise AssertionError("a replay started TensorFlow")

    monkeypatch.setattr(tfsession.OneShotSession, "start_smoke", no_tensorflow)
    monkeypatch.setattr(tf_facts, "collect", no_tensorflow)
    code, replayed, stderr = _replay(path, tmp_path)
    assert code == 0 and _decided(replayed) == _decided(result.report), stderr
    assert (
        replayed["smoke"]["final_val_binary_accuracy"] == result.report["smoke"]["final_val_binary_accuracy"]
    )
    code, replayed, _ = _replay(path, tmp_path, "--min-val-accuracy", "0.99")
    accuracy = next(c for c in replayed["checks"] if c["id"] == "smoke.accuracy")
    assert (code, accuracy["status"]) == (42, "fail")
    assert "below --min-val-accuracy 0.99" in accuracy["summary"]
    code, replayed, _ = _replay(path, tmp_path, "--min-busbw-gbps", "1e5")
    assert (code, replayed["verdict"]["check"]) == (43, "smoke.allreduce_bandwidth")
