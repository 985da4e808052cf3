"""--cross-device-ops: what "auto" means on each host, how the choice travels to the child, and the hint a
failed NCCL collective gets under WSL2. The child building the strategy for real is in test_smoke_e2e.py
(test_wsl2_gets_hierarchical_copy_and_the_same_table)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hosts
from test_smoke_checks import _records, _run
from tfdist_validate.checks import smoke_verdicts
from tfdist_validate.context import Context, Deadline
from tfdist_validate.errors import UsageError
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.runtime import read_runtime
from tfdist_validate.settings import Settings, resolve
from tfdist_validate.smoke import cross_device
from tfdist_validate.smoke.spec import ChildSpec


@pytest.mark.parametrize(
    ("setting", "wsl2", "multi_worker", "replicas", "expected"),
    [
        ("auto", False, False, 2, "tensorflow"),
        ("auto", True, False, 2, "hierarchical-copy"),
        ("auto", True, False, 8, "hierarchical-copy"),
        # HierarchicalCopyAllReduce drops a replica from the sum with an odd count (test below): not chosen
        ("auto", True, False, 3, "reduce-to-one-device"),
        ("auto", True, False, 1, "reduce-to-one-device"),
        ("auto", True, False, None, "reduce-to-one-device"),
        ("tensorflow", True, False, 2, "tensorflow"),  # the override: test NCCL under WSL2 anyway
        ("nccl", False, False, 2, "nccl"),
        ("reduce-to-one-device", True, False, 2, "reduce-to-one-device"),
        ("hierarchical-copy", False, False, 3, "hierarchical-copy"),  # asked for: built, with a warning
        ("auto", True, True, 2, "tensorflow"),  # MultiWorkerMirroredStrategy takes no cross_device_ops
        ("hierarchical-copy", False, True, 2, "tensorflow"),
    ],
)
def test_what_each_setting_builds(
    setting: str, wsl2: bool, multi_worker: bool, replicas: int | None, expected: str
) -> None:
    implementation, why = cross_device.choose(setting, wsl2, multi_worker, replicas)
    assert implementation == expected
    assert why
    if multi_worker and setting not in ("auto", "tensorflow"):
        assert "was not used" in why
    if implementation == "hierarchical-copy" and replicas is not None and replicas % 2:
        assert "leaves one replica out of the sum" in why


def test_hierarchical_copy_leaves_a_replica_out_of_an_odd_sum() -> None:
    """Why "auto" never picks it for an odd count: TensorFlow's own result, on 3 logical CPU devices."""
    code = """
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
for ops in (tf.distribute.HierarchicalCopyAllReduce(), tf.distribute.ReductionToOneDevice()):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1", "/cpu:2"], cross_device_ops=ops)
    def step():
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("sum", tf.cast(ctx.replica_id_in_sync_group + 1, tf.float32))
    sums = [float(t) for t in strategy.experimental_local_results(strategy.run(tf.function(step)))]
    print(type(ops).__name__, sums)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.splitlines() == [
        "HierarchicalCopyAllReduce [3.0, 3.0, 3.0]",  # 1 + 2 + 3 is 6: replica 3 was left out
        "ReductionToOneDevice [6.0, 6.0, 6.0]",
    ]


def test_every_named_implementation_is_a_tensorflow_class() -> None:
    import tensorflow as tf

    for implementation, name in cross_device.TF_CLASSES.items():
        assert type(cross_device.make(tf, implementation)).__name__ == name
    assert cross_device.make(tf, "tensorflow") is None


def test_the_option_and_its_environment_twin() -> None:
    assert Settings().cross_device_ops == "auto"
    assert resolve({"cross_device_ops": "Hierarchical-Copy"}, {}).cross_device_ops == "hierarchical-copy"
    assert resolve({}, {"TFDIST_CROSS_DEVICE_OPS": "tensorflow"}).cross_device_ops == "tensorflow"
    with pytest.raises(UsageError, match="expected one of auto, tensorflow, hierarchical-copy"):
        resolve({"cross_device_ops": "ring"}, {})


def test_the_choice_reaches_the_child_through_the_spec() -> None:
    spec = ChildSpec(
        "r", None, None, 3, 16, 64.0, 60.0, cross_device_ops="hierarchical-copy", cross_device_ops_why="w"
    )
    back = ChildSpec.from_json(spec.to_json())
    assert (back.cross_device_ops, back.cross_device_ops_why) == ("hierarchical-copy", "w")
    # a spec written without them (an older parent) means TensorFlow's own choice
    older = {k: v for k, v in spec.__dict__.items() if not k.startswith("cross_device")}
    assert ChildSpec.from_dict(older).cross_device_ops == "tensorflow"


def _ctx(tmp_path: Path, host: hosts.Host) -> Context:
    ctx = Context(Settings(cpu_replicas=None, cross_device_ops="tensorflow"), "run", {}, Deadline.after(60))
    ctx.facts.runtime = read_runtime(host.root, host.env)
    return ctx


NCCL_USED = {
    "cross_device_ops": {
        "class": "CollectiveAllReduce",
        "implementation": "NCCL",
        "name": "collective all-reduce (NCCL)",
        "reduce_to_device": None,
        "requested": "tensorflow",
        "why": "--cross-device-ops tensorflow",
    }
}
FAILED = {"ok": False, "error": "InternalError: NCCL error: unhandled cuda error"}


def test_a_failed_nccl_all_reduce_under_wsl2_names_the_fallback(tmp_path: Path) -> None:
    run = _run(_records(strategy=NCCL_USED, allreduce=FAILED), tmp=tmp_path)
    found = run.results.get("allreduce")
    assert found is not None
    outcome = smoke_verdicts.allreduce_exact(found, run, _ctx(tmp_path, hosts.wsl2(tmp_path / "wsl")))
    assert outcome.code == ExitCode.COLLECTIVE_FAILED
    assert "HierarchicalCopyAllReduce" in outcome.hint and "under WSL2" in outcome.hint
    # on a plain Linux host the same failure gets NCCL's usual hint only
    plain = smoke_verdicts.allreduce_exact(
        found, run, _ctx(tmp_path, hosts.bare_host_with_driver(tmp_path / "h"))
    )
    assert "HierarchicalCopyAllReduce" not in plain.hint and "NCCL_DEBUG=INFO" in plain.hint
