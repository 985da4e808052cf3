"""Environment that changes collectives: listed with what it does (information, never a verdict) in the
report's host section, recorded so that a replay lists the same, and in the bug bundle's REPORT.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hosts
from conftest import run_cli
from test_bundle import _members, _options, _recorded
from tfdist_validate.bundle import make_bundle
from tfdist_validate.host.collective_env import effects


@pytest.mark.parametrize(
    ("env", "listed"),
    [
        ({}, []),
        ({"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "0"}, ["NCCL_P2P_DISABLE=1"]),
        (
            {"NCCL_IB_DISABLE": "1", "CUDA_LAUNCH_BLOCKING": "1"},
            ["NCCL_IB_DISABLE=1", "CUDA_LAUNCH_BLOCKING=1"],
        ),
        ({"NCCL_DEBUG": "INFO"}, ["NCCL_DEBUG=INFO"]),
        ({"NCCL_DEBUG": "WARN", "CUDA_LAUNCH_BLOCKING": "0"}, []),  # NCCL's default level; off
        ({"TF_FORCE_GPU_ALLOW_GROWTH": "false"}, ["TF_FORCE_GPU_ALLOW_GROWTH=false"]),
        ({"TF_FORCE_GPU_ALLOW_GROWTH": "true", "NCCL_P2P_DISABLE": "no"}, []),
    ],
)
def test_what_is_listed(env: dict[str, str], listed: list[str]) -> None:
    assert list(effects(env)) == listed


def test_the_report_lists_it_and_the_replay_keeps_it(tmp_path: Path) -> None:
    host = hosts.docker_with_toolkit(tmp_path / "root")
    host = hosts.Host(host.root, {**host.env, "NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO"})
    run = hosts.run_check(
        host, hosts.probes(hosts.nvml_two_healthy(), tf=hosts.recorded_tf(gpus=2)), tmp_path
    )
    listed = run.report["host"]["collective_env"]
    assert list(listed) == ["NCCL_P2P_DISABLE=1", "NCCL_DEBUG=INFO"]
    assert "host memory" in listed["NCCL_P2P_DISABLE=1"]
    assert run.code == 0  # information only
    out = tmp_path / "replayed.json"
    replayed = run_cli(
        ["replay", str(tmp_path / "report.json"), "--json", str(out)], {"NCCL_IB_DISABLE": "1"}
    )
    assert replayed.code == 0
    assert json.loads(out.read_text())["host"]["collective_env"] == listed  # the recorded env, not this one


def test_the_bundle_says_what_each_does(tmp_path: Path) -> None:
    path = make_bundle(_options(tmp_path), {"CUDA_LAUNCH_BLOCKING": "1"}, _recorded(check=False))
    text = _members(path)["REPORT.md"]
    assert "### Environment that changes collectives" in text
    assert "- `CUDA_LAUNCH_BLOCKING=1`: every CUDA kernel launch waits" in text
    assert (
        "changes collectives"
        not in _members(make_bundle(_options(tmp_path), {}, _recorded(False)))["REPORT.md"]
    )
