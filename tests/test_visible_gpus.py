"""Which NVML GPUs a run uses (host/visible.py), and the health layer judging only those."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import hosts
from conftest import run_cli
from tfdist_validate.host.gpus import Gpu
from tfdist_validate.host.visible import cuda_order, numbering_note, run_gpus, used_gpus
from tfdist_validate.tfsession import child_env

# four GPUs as NVML lists them (index = PCI bus order), UUIDs of the recorded H100 capture's shape
GPUS = [Gpu(index=i, uuid=f"GPU-{i}0b6f7b1-aaaa-bbbb-cccc-00000000000{i}") for i in range(4)]


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (None, [0, 1, 2, 3]),
        ("2,0", [2, 0]),  # CUDA's GPU:0 is NVML's GPU 2
        ("1,bogus,3", [1]),  # CUDA stops at the first entry that names no GPU
        ("1,1", [1]),
        ("GPU-30b6f7b1", [3]),  # a unique UUID prefix
        ("7", []),
        ("", []),
    ],
)
def test_cuda_order_follows_cuda_visible_devices(visible: str | None, expected: list[int]) -> None:
    order = cuda_order(GPUS, visible)
    assert order is not None and [g.index for g in order] == expected


def test_a_mig_uuid_cannot_be_mapped_to_an_nvml_gpu() -> None:
    assert cuda_order(GPUS, "MIG-4b0e6a2a-64c8-5d71-9d08-1dc0a6a3c0d9") is None


def test_devices_pick_tensorflows_names_among_the_visible_gpus() -> None:
    used = used_gpus(GPUS, "2,3,0", ["/gpu:1", "/gpu:2"])
    assert used is not None and [g.index for g in used] == [3, 0]
    assert (
        numbering_note(cuda_order(GPUS, "2,0") or [])
        == "TensorFlow's GPU:0 is NVML's GPU 2, GPU:1 is NVML's GPU 0"
    )
    assert numbering_note(GPUS) == ""


def test_a_fastest_first_order_set_by_the_user_means_the_mapping_is_unknown() -> None:
    assert run_gpus(GPUS, {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}, None) is None
    assert run_gpus(GPUS, {"CUDA_VISIBLE_DEVICES": "1"}, None) == [GPUS[1]]


def test_the_tensorflow_child_numbers_gpus_as_nvml_does() -> None:
    assert child_env({})["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert child_env({"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"


def _ecc_on_gpu_1(tmp_path: Path, **env: str) -> hosts.CheckRun:
    host = hosts.docker_with_toolkit(tmp_path / "root")
    host.env.update(env)
    probe_set = hosts.probes(hosts.nvml_ecc_errors(), tf=hosts.recorded_tf(gpus=1 if env else 2))
    return hosts.run_check(host, probe_set, tmp_path, fail_on_health="true", min_gpus="1")


def test_a_broken_gpu_the_run_does_not_use_is_reported_but_does_not_fail(tmp_path: Path) -> None:
    # GPU 1 has uncorrected ECC errors and a failed row remap (a public report's counters); the run uses GPU 0
    result = _ecc_on_gpu_1(tmp_path, CUDA_VISIBLE_DEVICES="0")
    health = result.check("health.gpus")
    assert result.code == 0 and health["status"] == "warn", health
    assert health["summary"].startswith(
        "1 GPU(s) this run uses healthy by NVML; not used by this run: GPU 1:"
    )
    assert health["details"]["judged_gpus"] == [0]
    # the same broken GPU in use fails the run, as before
    (tmp_path / "b").mkdir()
    used = _ecc_on_gpu_1(tmp_path / "b", CUDA_VISIBLE_DEVICES="1")
    assert used.code == 31 and used.report["verdict"]["check"] == "health.gpus"


def test_replay_judges_the_gpus_the_recorded_run_used(tmp_path: Path) -> None:
    result = _ecc_on_gpu_1(tmp_path, CUDA_VISIBLE_DEVICES="0")
    assert result.code == 0
    report = tmp_path / "report.json"
    saved = tmp_path / "saved.json"
    shutil.copy(report, saved)
    shutil.rmtree(tmp_path / "root")
    replayed = run_cli(
        ["replay", str(saved), "--json", str(tmp_path / "again.json")], {"CUDA_VISIBLE_DEVICES": "1"}
    )
    assert replayed.code == 0, replayed.stderr  # this shell's CUDA_VISIBLE_DEVICES is not the recorded run's
    again = json.loads((tmp_path / "again.json").read_text())
    assert [c["status"] for c in again["checks"]] == [c["status"] for c in result.report["checks"]]


def test_devices_count_prints_both_numberings_where_they_differ(tmp_path: Path) -> None:
    host = hosts.docker_with_toolkit(tmp_path / "root")
    host.env["CUDA_VISIBLE_DEVICES"] = "1,0"
    result = hosts.run_check(host, hosts.probes(hosts.nvml_h100s(2), tf=hosts.recorded_tf(gpus=2)), tmp_path)
    summary = result.check("devices.count")["summary"]
    assert summary.endswith("(TensorFlow's GPU:0 is NVML's GPU 1, GPU:1 is NVML's GPU 0)"), summary
