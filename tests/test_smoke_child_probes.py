"""The child's stages after `fit` on real logical CPU devices: the timed all-reduce loop, the convolution
probe, the pass through the distributed dataset, and how an out-of-memory in the strategy's scope is
recorded.

One fresh interpreter runs all of them (logical devices must be configured before TensorFlow's runtime
starts, and one import of TensorFlow is the expensive part); each test reads its part of what it printed.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tfdist_validate.checks import smoke_probes, smoke_verdicts as verdicts
from tfdist_validate.context import Context, Deadline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Status
from tfdist_validate.settings import Settings
from tfdist_validate.smoke import child_checks, results
from tfdist_validate.smoke.run import SmokeRun

# tensorflow/tensorflow#38929: TensorFlow's message when cuDNN cannot start
CUDNN_INIT = (
    "Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try looking"
    " to see if a warning log message was printed above."
)
_PROBES = textwrap.dedent(
    """
    import json, time
    import tensorflow as tf
    from tfdist_validate.smoke import child_checks, child_probes, reference

    CUDNN_INIT = {cudnn_init!r}

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
    found = {}
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"])
    found["bandwidth"] = child_checks.allreduce_bandwidth(tf, strategy, 0.25, time.monotonic() + 120)
    found["no_time"] = child_checks.allreduce_bandwidth(tf, strategy, 0.25, time.monotonic() - 1)
    loop = child_checks.chained_all_reduce(tf, strategy)
    ones = child_checks.per_replica_values(tf, strategy, lambda i: tf.ones([4]))
    found["chained"] = {
        str(count): [t.numpy().tolist() for t in strategy.experimental_local_results(loop(ones, count))]
        for count in (0, 1, 3)
    }
    one = tf.distribute.MirroredStrategy(["/cpu:0"])
    found["one_replica"] = child_checks.allreduce_bandwidth(tf, one, 0.25, time.monotonic() + 60)

    found["conv"] = child_probes.conv_probe(tf, strategy)
    tf.keras.utils.set_random_seed(7)
    with strategy.scope():
        model = reference.build_model(tf)
    # Keras' own figure for this (untrained) model on the validation set, through its evaluate
    _, validation = reference.datasets(tf, 48)
    keras_accuracy = model.evaluate(validation, verbose=0, return_dict=True)["binary_accuracy"]
    found["keras_accuracy"] = keras_accuracy
    found["prefetch"] = child_probes.prefetch_pass(tf, strategy, model, 48, keras_accuracy)
    found["prefetch_other"] = child_probes.prefetch_pass(tf, strategy, model, 48, keras_accuracy - 1 / 128)

    # a cuDNN failure as TensorFlow raises it on a GPU host (tensorflow/tensorflow#38929), injected where the
    # probe calls the convolution: what the probe records of it
    def broken_conv2d(*args, **kwargs):
        raise tf.errors.UnknownError(None, None, CUDNN_INIT)

    real_conv2d, tf.nn.conv2d = tf.nn.conv2d, broken_conv2d
    found["conv_cudnn_error"] = child_probes.conv_probe(tf, strategy)
    tf.nn.conv2d = real_conv2d
    print(json.dumps(found))
    """
)


@pytest.fixture(scope="module")
def probes() -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBES.replace("{cudnn_init!r}", repr(CUDNN_INIT))],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
def test_the_timed_loop_reports_count_size_per_op_time_and_nccl_tests_busbw(probes: dict[str, Any]) -> None:
    record = probes["bandwidth"]
    assert record["ok"] and record["ran"] and "error" not in record
    assert record["replicas"] == 3 and record["size_bytes"] == 2**18  # 0.25 MiB of float32 per replica
    assert record["implementation"] == "collective all-reduce (RING)"  # logical CPUs: RING, not NCCL
    assert record["calls"] == child_checks.TIMED_CALLS == len(record["call_s"])
    assert child_checks.MIN_COUNT <= record["per_call"] <= child_checks.MAX_COUNT
    assert record["iterations"] == record["per_call"] * record["calls"]
    # the per-operation time is the median call over its count: many all-reduces per host sync
    median_call = statistics.median(record["call_s"])
    assert record["time_s"] == pytest.approx(median_call / record["per_call"]) and record["time_s"] > 0
    assert record["algbw_gbps"] == pytest.approx(record["size_bytes"] / record["time_s"] / 1e9)
    # nccl-tests' all-reduce busbw: algbw * 2(n-1)/n, 4/3 for three replicas
    assert record["busbw_gbps"] == pytest.approx(record["algbw_gbps"] * 4 / 3)


@pytest.mark.slow
def test_each_all_reduce_of_the_loop_takes_the_previous_result(probes: dict[str, Any]) -> None:
    # ones on three replicas: every round multiplies by 3, so `count` rounds really ran, one after the other
    chained = probes["chained"]
    assert chained == {
        "0": [[1.0] * 4] * 3,
        "1": [[3.0] * 4] * 3,
        "3": [[27.0] * 4] * 3,
    }


@pytest.mark.slow
def test_no_time_left_and_one_replica_time_nothing(probes: dict[str, Any]) -> None:
    assert probes["no_time"]["ok"] and not probes["no_time"]["ran"]
    assert probes["no_time"]["reason"] == "no time left before the deadline"
    assert probes["one_replica"]["ok"] and not probes["one_replica"]["ran"]
    assert "busbw_gbps" not in probes["one_replica"]


def test_loop_count_fills_the_target_within_the_deadline() -> None:
    target, calls = child_checks.CALL_TARGET_S, child_checks.TIMED_CALLS
    # 1/1024 s per all-reduce, plenty of time: the call lasts CALL_TARGET_S
    assert child_checks.loop_count(2**-10, calls, 600.0) == math.ceil(target * 1024)
    # so fast that the target would need more than MAX_COUNT
    assert child_checks.loop_count(1e-9, calls, 600.0) == child_checks.MAX_COUNT
    # so slow that the target is below MIN_COUNT: MIN_COUNT, when the deadline allows it
    assert child_checks.loop_count(0.1, calls, 600.0) == child_checks.MIN_COUNT
    # the deadline caps it: 5 calls in half of 0.15625 s at 1/4096 s: 64 each (the target would take 82)
    assert child_checks.loop_count(2**-12, calls, 600.0) == 82
    assert child_checks.loop_count(2**-12, calls, 0.15625) == 64
    # not even MIN_COUNT fits before the deadline
    assert child_checks.loop_count(0.1, calls, 5.0) is None


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    assert child_checks.bus_bandwidth(10.0, 2) == 10.0
    assert child_checks.bus_bandwidth(10.0, 8) == pytest.approx(17.5)


# The child's strategy stage, for real, with a model whose weights no host can hold (2**40 float32: 4 TiB):
# TensorFlow raises a real ResourceExhaustedError while the model is built in strategy.scope().
_OOM_IN_SCOPE = textwrap.dedent(
    """
    import sys, time
    import tensorflow as tf
    from tfdist_validate.smoke import child, reference
    from tfdist_validate.smoke.spec import ChildSpec

    def absurd(tf):
        return tf.keras.Sequential([tf.keras.Input((2**20,)), tf.keras.layers.Dense(2**20)])

    reference.build_model = absurd
    spec = ChildSpec(results_path=sys.argv[1], devices=None, cpu_replicas=2, epochs=1, per_replica_batch=16,
                     allreduce_mib=1, budget_s=60)
    child.run(tf, spec, child.Results(spec.results_path), time.monotonic() + 60)
    """
)


@pytest.mark.slow
def test_a_real_out_of_memory_in_the_strategy_scope_is_memory_not_a_collective(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _OOM_IN_SCOPE, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    parsed = results.parse(path.read_text())
    found = parsed.get("strategy")
    assert found is not None and not found["ok"] and found["oom"]
    assert found["error"].startswith("ResourceExhaustedError:") and "OOM when allocating" in found["error"]
    assert found["error_device"] == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert "fit" not in parsed.stages  # nothing ran after the failed stage
    run = SmokeRun(parsed, False, 0, tmp_path / "child.log", [], [], [])
    ctx = Context(Settings(cpu_replicas=2), "run", {}, Deadline.after(60))
    outcome = verdicts.strategy(found, run, ctx)  # type: ignore[arg-type]
    assert (outcome.status, outcome.code) == (Status.FAIL, ExitCode.TRAINING_FAILED)
    assert outcome.summary.startswith(
        "out of memory on CPU:0 (host memory) while creating MirroredStrategy and building the model in its"
        " scope: ResourceExhaustedError:"
    )
    assert "NCCL" not in outcome.hint


@pytest.mark.slow
def test_the_convolution_runs_forward_and_backward_on_every_replica(probes: dict[str, Any]) -> None:
    conv = probes["conv"]
    assert conv["ran"] and conv["ok"] and "error" not in conv
    assert conv["results"] == conv["replicas"] == 3
    assert conv["library"] == "TensorFlow's CPU kernels (no cuDNN)"  # logical CPUs: no cuDNN to run
    # output and both gradients against numpy: exact here (small multiples of 1/8 in float32)
    assert conv["max_rel_error"] <= 1e-6


@pytest.mark.slow
def test_a_cudnn_error_is_recorded_and_judged_as_the_cuda_libraries_layer(
    probes: dict[str, Any], tmp_path: Path
) -> None:
    found = probes["conv_cudnn_error"]
    assert not found["ok"] and found["ran"] and not found["oom"]
    # raised while the step is traced here (on a GPU host: as it runs): TensorFlow wraps it "in user code"
    assert found["error"].startswith("UnknownError: in user code:") and CUDNN_INIT in found["error"]
    # the same record on a GPU host, where the probe's library is cuDNN
    found["library"] = "cuDNN"
    run = SmokeRun(results.parse(""), False, 0, tmp_path / "child.log", [], [], [])
    outcome = smoke_probes.convolution(found, run, Context(Settings(), "run", {}, Deadline.after(60)))
    assert (outcome.status, outcome.code) == (Status.FAIL, ExitCode.TF_NO_GPU)
    assert outcome.summary.startswith(
        "cuDNN failed a Conv2D of a 4x16x16x8 input, forward and backward, with cuDNN: UnknownError: Failed"
        " to get convolution algorithm"
    )
    assert "Loaded runtime CuDNN library" in outcome.hint
    # in a dry run the same error is the CPU kernels', not cuDNN's: a training failure
    cpu = {**found, "library": "TensorFlow's CPU kernels (no cuDNN)"}
    assert smoke_probes.convolution(
        cpu, run, Context(Settings(cpu_replicas=2), "run", {}, Deadline.after(60))
    ).code == (ExitCode.TRAINING_FAILED)


@pytest.mark.slow
def test_the_validation_pass_goes_through_the_distributed_dataset_to_each_replicas_device(
    probes: dict[str, Any],
) -> None:
    passed = probes["prefetch"]
    assert passed["ok"] and passed["ran"] and "error" not in passed
    assert (
        passed["landed_on"]
        == passed["devices"]
        == [f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(3)]
    )
    # 128 rows in global batches of 48: 48, 48, 32 (the last split 11, 11, 10)
    assert (passed["batches"], passed["rows"], passed["expected_rows"]) == (3, 128, 128)
    assert passed["val_binary_accuracy"] == passed["fit_val_binary_accuracy"] == probes["keras_accuracy"]
    assert passed["correct"] == round(probes["keras_accuracy"] * 128)
    # the same pass compared with another figure than Keras' own is a mismatch
    other = probes["prefetch_other"]
    assert not other["ok"] and other["correct"] == passed["correct"]
