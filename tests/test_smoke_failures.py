"""How the smoke checks classify what TensorFlow raised: out of memory (which GPU), cuDNN, a collective.

The error texts are real, from public reports (each cited); the child's side of it (a real
ResourceExhaustedError raised in the strategy's scope on logical CPU devices) is in
test_smoke_child_probes.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tfdist_validate.checks import smoke_verdicts as verdicts
from tfdist_validate.context import Context, Deadline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.gpus import DriverSnapshot, Gpu
from tfdist_validate.result import Status
from tfdist_validate.settings import Settings
from tfdist_validate.smoke import errors, results
from tfdist_validate.smoke.run import SmokeRun

# keras-team/keras#9643: MirroredStrategy-era multi-GPU Keras, the second GPU out of memory
OOM_GPU1 = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[128,128,109,109] and type float on"
    " /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc"
)
# tensorflow/tensorflow#55502 (and #52086): an eager constant copied to a full GPU
DST_NOT_INITIALIZED = (
    "InternalError: Failed copying input tensor from /job:localhost/replica:0/task:0/device:CPU:0 to"
    " /job:localhost/replica:0/task:0/device:GPU:0 in order to run _EagerConst: Dst tensor is not"
    " initialized."
)
# tensorflow/tensorflow#38929
CUDNN_INIT = (
    "UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize,"
    " so try looking to see if a warning log message was printed above."
)
# tensorflow/tensorflow#55309 / tensorflow/text#1167 (after "Loaded runtime CuDNN library: 8.0.5 but source
# was compiled with: 8.6.0" in the log)
DNN_NOT_FOUND = "UnimplementedError: DNN library is not found.\n\t [[{{node model/conv1d/Conv1D}}]]"


def test_error_texts_are_read_for_memory_device_and_cudnn() -> None:
    assert errors.looks_like_oom(OOM_GPU1) and errors.looks_like_oom(DST_NOT_INITIALIZED)
    assert errors.looks_like_oom(
        "failed to allocate 10.76G (11551440896 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"
    )
    assert not errors.looks_like_oom(CUDNN_INIT) and not errors.looks_like_oom(DNN_NOT_FOUND)
    assert errors.names_cudnn(CUDNN_INIT) and errors.names_cudnn(DNN_NOT_FOUND)
    assert not errors.names_cudnn(OOM_GPU1)
    # the allocation's device, not the first device named; the copy's target, not its source
    assert errors.error_device(OOM_GPU1) == "/job:localhost/replica:0/task:0/device:GPU:1"
    assert errors.error_device(DST_NOT_INITIALIZED) == "/job:localhost/replica:0/task:0/device:GPU:0"
    assert errors.error_device("UnknownError: no device here") is None
    assert errors.gpu_index("/job:localhost/replica:0/task:0/device:GPU:1") == 1
    assert errors.gpu_index("/physical_device:GPU:3") == 3
    assert errors.gpu_index("/job:localhost/replica:0/task:0/device:CPU:0") is None


def _run(records: list[dict[str, Any]], tmp: Path) -> SmokeRun:
    import json

    return SmokeRun(
        results=results.parse("\n".join(json.dumps(r) for r in records)),
        timed_out=False,
        returncode=0,
        log_path=tmp / "child.log",
        log_tail=[],
        output_tail=[],
        leftover_pids=[],
    )


def _ctx(gpus: int = 4, env: dict[str, str] | None = None, **settings: Any) -> Context:
    ctx = Context(Settings(**settings), "run", env or {}, Deadline.after(60))
    names = ["NVIDIA H100 80GB HBM3"] * gpus
    ctx.facts.driver = DriverSnapshot(
        source="nvml", gpus=tuple(Gpu(index=i, name=name) for i, name in enumerate(names))
    )
    return ctx


def test_out_of_memory_while_building_the_model_is_memory_with_the_gpu_named(tmp_path: Path) -> None:
    # --devices /gpu:3,/gpu:1: the child makes physical GPUs 1 and 3 visible, TensorFlow calls them GPU:0 and
    # GPU:1, so the GPU:1 of the message is physical GPU 3
    found = {"ok": False, "oom": True, "error": OOM_GPU1, "error_device": errors.error_device(OOM_GPU1)}
    found["visible_gpus"] = ["/physical_device:GPU:1", "/physical_device:GPU:3"]
    outcome = verdicts.strategy(found, _run([], tmp_path), _ctx(devices=("/gpu:3", "/gpu:1")))  # type: ignore[arg-type]
    assert (outcome.status, outcome.code) == (Status.FAIL, ExitCode.TRAINING_FAILED)
    assert outcome.summary.startswith(
        "out of memory on TensorFlow's GPU:1 (NVML GPU 3, NVIDIA H100 80GB HBM3) while creating"
        " MirroredStrategy and building the model in its scope: ResourceExhaustedError: OOM when allocating"
    )
    assert "NCCL" not in outcome.hint and "nvidia-smi" in outcome.hint


def test_the_gpu_is_found_from_the_settings_when_the_child_did_not_record_them(tmp_path: Path) -> None:
    found = {"ok": False, "error": DST_NOT_INITIALIZED}  # no oom flag, no device: the text says both
    ctx = _ctx(devices=("/gpu:2",), env={"CUDA_VISIBLE_DEVICES": "3,2,1,0"})
    outcome = verdicts.strategy(found, _run([], tmp_path), ctx)  # type: ignore[arg-type]
    # CUDA_VISIBLE_DEVICES lists NVML GPUs 3,2,1,0: CUDA's GPU 2 is NVML's 1, TensorFlow's GPU:0 once visible
    assert outcome.code == ExitCode.TRAINING_FAILED
    assert "out of memory on TensorFlow's GPU:0 (NVML GPU 1, NVIDIA H100 80GB HBM3)" in outcome.summary


def test_without_the_mapping_tensorflows_name_is_kept(tmp_path: Path) -> None:
    found = {"ok": False, "oom": True, "error": OOM_GPU1}
    ctx = _ctx(env={"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})  # NVML cannot tell which GPU CUDA put first
    outcome = verdicts.strategy(found, _run([], tmp_path), ctx)  # type: ignore[arg-type]
    assert "out of memory on TensorFlow's GPU:1 while creating" in outcome.summary


def test_a_strategy_failure_that_is_not_memory_stays_a_collective_failure(tmp_path: Path) -> None:
    found = {
        "ok": False,
        "oom": False,
        "error": "InvalidArgumentError: Could not satisfy device specification",
    }
    outcome = verdicts.strategy(found, _run([], tmp_path), _ctx())  # type: ignore[arg-type]
    assert outcome.code == ExitCode.COLLECTIVE_FAILED and "NCCL_DEBUG" in outcome.hint


def test_a_collective_aborted_by_an_out_of_memory_is_memory(tmp_path: Path) -> None:
    error = f"InternalError: Collective ops is aborted by: {OOM_GPU1}"
    found = {"ok": False, "oom": True, "collective": True, "error": error}
    outcome = verdicts.training(found, _run([], tmp_path), _ctx())  # type: ignore[arg-type]
    assert outcome.code == ExitCode.TRAINING_FAILED
    assert outcome.summary.endswith(
        "(out of memory on TensorFlow's GPU:1 (NVML GPU 1, NVIDIA H100 80GB HBM3))"
    )
    assert "NCCL" not in outcome.hint


@pytest.mark.parametrize("device", ["/job:localhost/replica:0/task:0/device:CPU:0", None])
def test_a_cpu_or_unnamed_device(device: str | None, tmp_path: Path) -> None:
    found = {"ok": False, "oom": True, "error": "ResourceExhaustedError: OOM", "error_device": device}
    outcome = verdicts.strategy(found, _run([], tmp_path), _ctx(cpu_replicas=2))  # type: ignore[arg-type]
    assert outcome.code == ExitCode.TRAINING_FAILED
    where = " on CPU:0 (host memory)" if device else ""
    assert f"out of memory{where} while creating MirroredStrategy" in outcome.summary
    assert ("the host ran out of memory" in outcome.hint) == (device is not None)
