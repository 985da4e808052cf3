"""The child's own checks: the numpy comparisons directly, the TensorFlow side on real logical CPU devices."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

from tfdist_validate.jsonable import jsonable
from tfdist_validate.smoke.child_checks import compare_components, compare_exact, exact_pattern
from tfdist_validate.smoke.spec import ChildSpec


def test_identical_copies_compare_equal_bit_for_bit() -> None:
    a = np.array([0.1, -0.0, 3.0], dtype=np.float32)
    assert compare_components([a, a.copy(), a.copy()]) is None


def test_one_ulp_is_a_difference() -> None:
    a = np.array([1.0, 2.0], dtype=np.float32)
    b = a.copy()
    b[1] = np.nextafter(b[1], np.float32(3.0))
    difference = compare_components([a, b])
    assert difference is not None and 0 < difference < 1e-6


def test_signed_zero_counts_as_a_different_bit_pattern() -> None:
    # "bit for bit": -0.0 == 0.0 numerically, but a replica holding it did a different computation
    assert compare_components([np.zeros(2, np.float32), -np.zeros(2, np.float32)]) == 0.0


def test_shape_mismatch_is_infinite() -> None:
    assert compare_components([np.zeros(2), np.zeros(3)]) == float("inf")


def test_exact_pattern_sums_stay_exact_for_64_replicas() -> None:
    pattern = exact_pattern()
    total = np.zeros_like(pattern)
    for replica in range(64):  # any order of addition, here the worst: one by one
        total += pattern * np.float32(replica + 1)
    expected = pattern * np.float32(64 * 65 // 2)
    assert compare_exact([total], expected) == []


def test_compare_exact_names_the_replica_and_element() -> None:
    expected = exact_pattern() * np.float32(3)
    bad = expected.copy()
    bad[5] += np.float32(0.25)
    assert compare_exact([expected, bad], expected) == [
        {"replica": 1, "index": 5, "got": float(bad[5]), "want": float(expected[5])}
    ]
    assert compare_exact([expected.astype(np.float64)], expected)[0]["index"] is None


def test_spec_round_trip_and_devices() -> None:
    spec = ChildSpec("/tmp/r.jsonl", None, 2, 3, 16, 64.0, 100.0)
    assert ChildSpec.from_json(spec.to_json()) == spec
    assert spec.strategy_devices() == ["/cpu:0", "/cpu:1"]
    restricted = ChildSpec("/tmp/r.jsonl", ("/cpu:1",), 2, 3, 16, 64.0, 100.0)
    assert ChildSpec.from_json(restricted.to_json()).strategy_devices() == ["/cpu:1"]
    assert ChildSpec("/tmp/r.jsonl", None, None, 3, 16, 64.0, 100.0).strategy_devices() is None


def test_jsonable_turns_nan_into_null() -> None:
    assert jsonable({"loss": float("nan"), "x": [float("inf"), 1.5], "t": (1,)}) == {
        "loss": None,
        "x": [None, 1.5],
        "t": [1],
    }
    import numpy as np

    assert jsonable({"f": np.float32(0.75), "i": np.int64(3), "o": object}) == {
        "f": 0.75,
        "i": 3,
        "o": str(object),
    }


# Runs in a fresh interpreter: logical devices must be configured before TensorFlow initialises its runtime.
_REAL_TF = textwrap.dedent(
    """
    import json
    import tensorflow as tf
    from tfdist_validate.smoke import child_checks

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:1"])
    with strategy.scope():
        kept = tf.Variable(tf.ones((3, 2)), name="kept")
        broken = tf.Variable(tf.ones((4,)), name="broken")
    outside = tf.Variable(1.0, name="outside")
    healthy = child_checks.replicas_in_sync(tf, strategy, [kept])
    # what a broken gradient all-reduce leaves behind: replica 1 applied a different update
    strategy.experimental_local_results(broken)[1].assign([1.0, 1.0, 1.5, 1.0])
    desynced = child_checks.replicas_in_sync(tf, strategy, [kept, broken])
    unscoped = child_checks.replicas_in_sync(tf, strategy, [kept, outside])
    print(json.dumps({
        "healthy": healthy,
        "desynced": desynced,
        "unscoped": unscoped,
        "allreduce": child_checks.allreduce_exact(
            tf, strategy, child_checks.sum_across_replicas(tf, strategy)),
        "cross_device_ops": child_checks.describe_cross_device_ops(strategy),
    }))
    """
)


@pytest.mark.slow
def test_real_mirrored_variables_all_reduce_and_implementation() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _REAL_TF], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["healthy"]["ok"] and found["healthy"]["variables_checked"] == 1
    desynced = found["desynced"]
    assert not desynced["ok"] and desynced["mismatched_count"] == 1
    assert desynced["mismatched"][0]["variable"].startswith("broken")
    assert desynced["mismatched"][0]["max_abs_diff"] == 0.5
    assert found["unscoped"]["not_mirrored"] == ["outside:0"] and not found["unscoped"]["ok"]
    allreduce = found["allreduce"]
    assert allreduce["ok"] and allreduce["wrong"] == []
    assert allreduce["first_values"] == [0.75, 0.75]  # 0.25 * (1 + 2), on each replica
    assert found["cross_device_ops"] == {
        "class": "CollectiveAllReduce",
        "implementation": "RING",
        "name": "collective all-reduce (RING)",
        "reduce_to_device": None,
    }


# The smoke test feeds each replica its own copy of the reference pipeline (child._per_replica_datasets)
# instead of distributing the global one; every replica must still get exactly the rows it would have got.
_INPUT_SPLIT = textwrap.dedent(
    """
    import json
    import numpy as np
    import tensorflow as tf
    from tfdist_validate.smoke import child, reference

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 4)
    tf.keras.utils.set_random_seed(7)
    checked = []
    for replicas, per_replica in ((2, 16), (3, 16), (4, 5), (3, 7)):
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
        global_batch = replicas * per_replica
        theirs = [strategy.experimental_distribute_dataset(d)
                     for d in reference.datasets(tf, global_batch)]
        ours = child._per_replica_datasets(tf, strategy, global_batch)
        for ref_ds, our_ds in zip(theirs, ours):
            for _ in range(3):  # every new iterator draws the next shuffle order
                ref_rows = [[[t.numpy().tolist() for t in strategy.experimental_local_results(part)]
                             for part in batch] for batch in ref_ds]
                our_rows = [[[t.numpy().tolist() for t in strategy.experimental_local_results(part)]
                             for part in batch] for batch in our_ds]
                assert ref_rows == our_rows, (replicas, per_replica)
                checked.append(len(ref_rows))
    print(json.dumps(checked))
    """
)


@pytest.mark.slow
def test_per_replica_input_gives_every_replica_the_reference_rows() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _INPUT_SPLIT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # batches per pass: 512 and 128 examples in global batches of 32, 48, 20 and 21 (partial last batches)
    assert (
        json.loads(done.stdout.strip().splitlines()[-1])
        == [16] * 3 + [4] * 3 + [11] * 3 + [3] * 3 + [26] * 3 + [7] * 3 + [25] * 3 + [7] * 3
    )


class _FakeGpu:
    def __init__(self, index: int) -> None:
        self.name = f"/physical_device:GPU:{index}"


class _FakeConfig:
    """tf.config as _configure_gpus uses it, recording the calls in order; like TensorFlow it refuses both
    calls once the runtime has started (here: once `started` is set)."""

    def __init__(self, gpus: int, *, started: bool = False) -> None:
        self.gpus = [_FakeGpu(i) for i in range(gpus)]
        self.calls: list[tuple[str, Any]] = []
        self.started = started
        self.experimental = self

    def list_physical_devices(self, kind: str) -> list[_FakeGpu]:
        return self.gpus if kind == "GPU" else []

    def set_visible_devices(self, devices: list[_FakeGpu], kind: str) -> None:
        if self.started:
            raise RuntimeError("Visible devices cannot be modified after being initialized")
        self.calls.append(("visible", [d.name for d in devices]))

    def set_memory_growth(self, device: _FakeGpu, enable: bool) -> None:
        if self.started:
            raise RuntimeError("Physical devices cannot be modified after being initialized")
        self.calls.append(("growth", (device.name, enable)))


def _spec(**fields: Any) -> ChildSpec:
    base = {"results_path": "r", "epochs": 1, "per_replica_batch": 16, "allreduce_mib": 1, "budget_s": 60}
    return ChildSpec.from_dict({**base, **fields})


def _configure(config: _FakeConfig, spec: ChildSpec) -> tuple[list[str], list[str] | None]:
    from types import SimpleNamespace

    from tfdist_validate.smoke.child_devices import configure_gpus as _configure_gpus

    visible, devices = _configure_gpus(SimpleNamespace(config=config), spec)
    return [gpu.name for gpu in visible], devices


def test_devices_restrict_the_visible_gpus_and_each_grows_its_memory_before_any_op() -> None:
    config = _FakeConfig(4)
    visible, devices = _configure(config, _spec(devices=["/gpu:3", "/gpu:1"]))
    assert visible == ["/physical_device:GPU:1", "/physical_device:GPU:3"]
    # visibility first, then memory growth on exactly the GPUs the run uses, and nothing on GPUs 0 and 2
    assert config.calls == [
        ("visible", visible),
        ("growth", ("/physical_device:GPU:1", True)),
        ("growth", ("/physical_device:GPU:3", True)),
    ]
    # TensorFlow renumbers the visible GPUs: physical 3 and 1 are now /gpu:1 and /gpu:0
    assert devices == ["/gpu:1", "/gpu:0"]


def test_without_devices_every_gpu_grows_and_mirroredstrategy_keeps_its_default() -> None:
    config = _FakeConfig(2)
    visible, devices = _configure(config, _spec())
    assert devices is None and len(visible) == 2
    assert [c for c in config.calls if c[0] == "growth"] == [(("growth", (g, True))) for g in visible]


def test_a_dry_run_hides_every_gpu_and_configures_none() -> None:
    config = _FakeConfig(2)
    visible, devices = _configure(config, _spec(cpu_replicas=2, devices=["/cpu:1"]))
    assert visible == [] and config.calls == [("visible", [])]
    assert devices == ["/cpu:1"]


def test_multi_worker_restricts_too_but_passes_no_device_list() -> None:
    config = _FakeConfig(4)
    visible, devices = _configure(config, _spec(devices=["/gpu:0", "/gpu:2"], multi_worker=True))
    assert visible == ["/physical_device:GPU:0", "/physical_device:GPU:2"] and devices is None


def test_a_gpu_that_is_not_there_is_named() -> None:
    with pytest.raises(ValueError, match="--devices names GPU 5 but TensorFlow sees 2 GPU"):
        _configure(_FakeConfig(2), _spec(devices=["/gpu:0", "/gpu:5"]))


def test_after_the_runtime_started_tensorflows_refusal_is_not_hidden() -> None:
    # the child's strategy stage turns this into a failed record with TensorFlow's message
    with pytest.raises(RuntimeError, match="after being initialized"):
        _configure(_FakeConfig(2, started=True), _spec())
