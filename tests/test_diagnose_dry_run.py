"""A --cpu-replicas dry run hides the GPUs on purpose: its log's missing-driver lines are not causes."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# Printed by TensorFlow 2.21 on this project's CPU-only development machine (no libcuda), at import.
CUINIT = (
    "E0000 00:00:1796068099.043935   15606 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error:"
    " Failed call to cuInit: UNKNOWN ERROR (303)"
)
MARKER = "tfdist-validate smoke test: CPU dry run on 2 logical CPU device(s); GPUs hidden"
PEER = (
    "Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks are unhealthy"
    " (stopped sending heartbeats):"
)


def test_without_the_marker_a_cuinit_failure_is_a_driver_problem() -> None:
    assert diagnose(CUINIT).code == ExitCode.NO_DRIVER


def test_in_a_dry_run_it_is_expected() -> None:
    result = diagnose(f"{CUINIT}\n{MARKER}\n")
    assert result.code == ExitCode.OK
    assert [line.number for line in result.evidence["cpu-dry-run"]] == [2]


def test_in_a_dry_run_other_causes_still_count() -> None:
    assert diagnose(f"{CUINIT}\n{MARKER}\n{PEER}\n").code == ExitCode.COLLECTIVE_FAILED
