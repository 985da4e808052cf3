"""Our own checks, run in the smoke-test child after `fit`: replicas in sync, an exact all-reduce, bandwidth.

The comparisons themselves are plain numpy (`compare_components`, `compare_exact`) so tests can drive them
with hand-made arrays; the TensorFlow side only gathers what each replica holds.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import numpy as np

from tfdist_validate.smoke.records import AllreduceRecord, BandwidthRecord, Mismatch, SyncRecord, WrongValue

# Exactly representable float32 values (quarters below 2**18): every partial sum over up to 64 replicas is
# exact too, so the cross-replica sum must match bit for bit whatever order the implementation adds in.
EXACT_ELEMENTS = 1 << 16
MAX_LISTED = 20  # mismatches named in the report; the count is always complete

_CROSS_DEVICE_NAMES = {
    "NcclAllReduce": "NCCL all-reduce",
    "HierarchicalCopyAllReduce": "hierarchical copy",
    "ReductionToOneDevice": "reduce to one device",
    "CollectiveAllReduce": "collective all-reduce",
}


def describe_cross_device_ops(strategy: Any) -> dict[str, Any]:
    """Which implementation MirroredStrategy really uses for float all-reduces.

    TensorFlow has no public accessor; these private attributes are read defensively. Since TF 2.x,
    MirroredStrategy defaults to CollectiveAllReduce with the NCCL implementation on physical GPUs and RING
    on CPUs or virtual GPUs (tensorflow/python/distribute/mirrored_strategy.py,
    `_make_collective_ops_with_fallbacks`); int32 values always go through ReductionToOneDevice.
    """
    ops = getattr(strategy.extended, "_cross_device_ops", None)
    cls = type(ops).__name__ if ops is not None else None
    options = getattr(ops, "_options", None)
    implementation = getattr(getattr(options, "implementation", None), "name", None)
    reduce_to = getattr(ops, "reduce_to_device", None)
    name = _CROSS_DEVICE_NAMES.get(cls or "", cls or "unknown")
    if implementation:
        name = f"{name} ({implementation})"
    return {
        "class": cls,
        "implementation": implementation,
        "name": name,
        "reduce_to_device": str(reduce_to) if reduce_to is not None else None,
    }


def epoch_timer(tf: Any) -> Any:
    """A Keras callback that times the training part of each epoch (until validation starts).

    Epoch-level hooks only: no per-batch callback, so fit runs exactly as in the reference.
    """

    class EpochTimer(tf.keras.callbacks.Callback):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.train_s: list[float] = []
            self._begin = 0.0
            self._train_end: float | None = None

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._begin = time.perf_counter()
            self._train_end = None

        def on_test_begin(self, logs: Any = None) -> None:
            if self._train_end is None:
                self._train_end = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            end = self._train_end if self._train_end is not None else time.perf_counter()
            self.train_s.append(end - self._begin)

    return EpochTimer()


def compare_components(parts: list[np.ndarray]) -> float | None:
    """None when every replica's copy is bit-identical to the first; else the largest difference."""
    first = parts[0]
    if all(
        p.shape == first.shape and p.dtype == first.dtype and p.tobytes() == first.tobytes() for p in parts
    ):
        return None
    if any(p.shape != first.shape for p in parts):
        return float("inf")
    return max(
        float(np.max(np.abs(p.astype(np.float64) - first.astype(np.float64)), initial=0.0)) for p in parts
    )


def local_replicas(strategy: Any) -> int:
    """Replicas on this worker: all of them under MirroredStrategy, a share under MultiWorkerMirrored."""
    return len(strategy.extended.worker_devices)


def _gather_from_all_workers(tf: Any, strategy: Any, variable: Any) -> list[np.ndarray]:
    """Every replica's copy of `variable`, from every worker, as raw bytes-comparable arrays.

    Each replica contributes its own copy (bitcast to integers, so the comparison stays bit for bit) and an
    all-gather, one of TensorFlow's own collectives, brings all of them to every worker.
    """

    @tf.function  # type: ignore[untyped-decorator]
    def gather() -> Any:
        def mine() -> Any:
            value = tf.reshape(tf.identity(variable), [1, -1])
            if value.dtype.is_floating and value.dtype.size == 4:
                value = tf.bitcast(value, tf.int32)
            return value

        return strategy.gather(strategy.run(mine), axis=0)

    return list(np.asarray(gather().numpy()))


def replicas_in_sync(tf: Any, strategy: Any, variables: list[Any]) -> SyncRecord:
    """Every mirrored variable (weights, optimizer state) must hold the same bits on every replica.

    Sync-on-read variables (metric totals and counts) differ per replica by design and are skipped.
    """
    replicas = int(strategy.num_replicas_in_sync)
    seen: set[int] = set()
    checked = skipped_on_read = 0
    mismatched: list[Mismatch] = []
    not_mirrored: list[str] = []
    for variable in variables:
        # A Keras 3 variable wraps the TensorFlow one (a MirroredVariable under MirroredStrategy).
        inner = variable if isinstance(variable, tf.Variable) else getattr(variable, "value", variable)
        if id(inner) in seen:
            continue
        seen.add(id(inner))
        name = str(getattr(variable, "path", None) or getattr(inner, "name", "?"))
        if not isinstance(inner, tf.distribute.DistributedValues):
            not_mirrored.append(name)  # created outside strategy.scope(): not distributed at all
            continue
        if inner.synchronization == tf.VariableSynchronization.ON_READ:
            skipped_on_read += 1
            continue
        parts = [np.asarray(p.numpy()) for p in strategy.experimental_local_results(inner)]
        if local_replicas(strategy) != replicas:  # other workers hold the other copies: fetch them too
            parts = _gather_from_all_workers(tf, strategy, inner)
        checked += 1
        difference = compare_components(parts) if len(parts) == replicas else float("inf")
        if difference is not None:
            mismatched.append({"variable": name, "copies": len(parts), "max_abs_diff": difference})
    return {
        "ran": True,
        "ok": checked > 0 and not mismatched and not not_mirrored,
        "replicas": replicas,
        "variables_checked": checked,
        "sync_on_read_skipped": skipped_on_read,
        "mismatched_count": len(mismatched),
        "mismatched": mismatched[:MAX_LISTED],
        "not_mirrored": not_mirrored[:MAX_LISTED],
    }


def exact_pattern() -> np.ndarray:
    return (np.arange(EXACT_ELEMENTS) % 97 + 0.25).astype(np.float32)


def compare_exact(got: list[np.ndarray], expected: np.ndarray) -> list[WrongValue]:
    """The replicas whose all-reduce result differs from `expected` in any bit, with where it first does."""
    wrong: list[WrongValue] = []
    for replica, values in enumerate(got):
        if values.dtype == expected.dtype and values.shape == expected.shape:
            if values.tobytes() == expected.tobytes():
                continue
            first = int(np.flatnonzero(values != expected)[0]) if np.any(values != expected) else 0
            wrong.append(
                {
                    "replica": replica,
                    "index": first,
                    "got": float(values[first]),
                    "want": float(expected[first]),
                }
            )
        else:
            wrong.append({"replica": replica, "index": None, "got": None, "want": None})
    return wrong


def per_replica_values(tf: Any, strategy: Any, make: Any) -> Any:
    """`make(replica_id)` on every local replica, created eagerly on that replica's device: no tf.function
    to trace (a traced fill cost 0.1-0.2 s). TensorFlow's distribute_values_from_function alone would leave
    every value on the first device."""
    devices = strategy.extended.worker_devices

    def on_device(context: Any) -> Any:
        replica = context.replica_id_in_sync_group
        # global replica ids run worker by worker, each worker holding the same number of replicas
        with tf.device(devices[replica % len(devices)]):
            return make(replica)

    return strategy.experimental_distribute_values_from_function(on_device)


def sum_across_replicas(tf: Any, strategy: Any) -> Any:
    """A tf.function: the cross-replica SUM of a per-replica value, as every replica receives it (the exact
    check's; the bandwidth check times chained_all_reduce's loop)."""

    @tf.function  # type: ignore[untyped-decorator]
    def reduce(values: Any) -> Any:
        def sum_across(value: Any) -> Any:
            # With one local replica (a worker of MultiWorkerMirroredStrategy) strategy.run hands back a plain
            # tensor rather than a per-replica value; identity places it on this replica's device, without
            # which TensorFlow answers "destinations can not be empty".
            return tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, tf.identity(value)
            )

        return strategy.run(sum_across, args=(values,))

    return reduce


def allreduce_exact(tf: Any, strategy: Any, reduce: Any) -> AllreduceRecord:
    """Replica i contributes (i + 1) * pattern; every replica must receive n(n+1)/2 * pattern exactly.
    `reduce` is sum_across_replicas' function."""
    replicas = int(strategy.num_replicas_in_sync)
    pattern = exact_pattern()
    try:
        mine = per_replica_values(tf, strategy, lambda i: tf.constant(pattern) * float(i + 1))
        got = [np.asarray(t.numpy()) for t in strategy.experimental_local_results(reduce(mine))]
    except Exception as error:
        return {"ran": True, "ok": False, "replicas": replicas, "error": f"{type(error).__name__}: {error}"}
    expected = pattern * np.float32(replicas * (replicas + 1) // 2)
    wrong = compare_exact(got, expected)
    return {
        "ran": True,
        "ok": not wrong and len(got) == local_replicas(strategy),
        "replicas": replicas,
        "results": len(got),
        "elements": EXACT_ELEMENTS,
        "dtype": "float32",
        # the first element on every replica: the real values, so a reader can see the sum that came back
        "first_values": [float(g.reshape(-1)[0]) for g in got],
        "expected_first": float(expected[0]),
        "wrong": wrong[:MAX_LISTED],
    }


# The timed all-reduce loop (allreduce_bandwidth). One call of the loop should last about this long: long
# enough that its one dispatch and one host sync (about a millisecond on a CPU host, less on a GPU's stream)
# are noise beside the all-reduces inside it, short enough that several calls fit between the bursts of
# other work a shared machine has: their median is the figure.
CALL_TARGET_S = 0.02
TIMED_CALLS = 5
PROBE_COUNT = 10  # all-reduces in the call that sizes the timed calls
MIN_COUNT, MAX_COUNT = 10, 100_000
# Across workers every member must run the same collectives, so a multi-worker run cannot size its calls
# from its own warm-up (workers would disagree): fixed counts, the same on every worker (and fewer calls:
# each all-reduce crosses the network).
MULTI_WORKER_COUNT, MULTI_WORKER_CALLS = 10, 3


def _wait_for(strategy: Any, outputs: Any) -> None:
    # Reading one element from every replica waits until the collective has finished on every device.
    for tensor in strategy.experimental_local_results(outputs):
        tensor[:1].numpy()


def chained_all_reduce(tf: Any, strategy: Any) -> Any:
    """A tf.function(values, count): `count` SUM all-reduces, one after the other, in ONE traced call.

    Each all-reduce takes the previous one's result as input, so none can be elided or run beside another;
    the loop is a tf.while_loop around strategy.run (the shape of Keras' steps_per_execution loop), traced
    once whatever `count` is. Buffers of zeros stay zeros, so the sums never overflow.
    """

    def one(value: Any) -> Any:
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(value))

    @tf.function  # type: ignore[untyped-decorator]
    def loop(values: Any, count: Any) -> Any:
        def body(done: Any, current: Any) -> tuple[Any, Any]:
            return done + 1, strategy.run(one, args=(current,))

        # strategy.run hands back a plain tensor where this worker has one replica: the loop then carries
        # that tensor, so what goes around the loop keeps the shape it came in with
        local = strategy.experimental_local_results(values)
        start = values if len(local) > 1 else local[0]
        _, last = tf.while_loop(lambda done, _current: done < count, body, (tf.constant(0), start))
        return last

    return loop


def _timed_call(tf: Any, strategy: Any, loop: Any, buffers: Any, count: int) -> float:
    began = time.perf_counter()
    _wait_for(strategy, loop(buffers, tf.constant(count)))
    return time.perf_counter() - began


def loop_count(per_op_s: float, calls_left: int, seconds_left: float) -> int | None:
    """All-reduces per timed call: enough for CALL_TARGET_S, fewer when `calls_left` calls of that size would
    not end before `seconds_left` (half of it: the verdict and the report come after); None when not even
    MIN_COUNT fit."""
    per_op_s = max(per_op_s, 1e-9)
    wanted = math.ceil(CALL_TARGET_S / per_op_s)
    affordable = int(seconds_left / 2 / calls_left / per_op_s)
    count = min(wanted, affordable, MAX_COUNT)
    return max(count, MIN_COUNT) if affordable >= MIN_COUNT else None


def bus_bandwidth(algbw_gbps: float, replicas: int) -> float:
    """nccl-tests, doc/PERFORMANCE.md: all-reduce bus bandwidth = algbw * 2(n-1)/n."""
    return algbw_gbps * 2 * (replicas - 1) / replicas


def allreduce_bandwidth(tf: Any, strategy: Any, mib: float, deadline: float) -> BandwidthRecord:
    """Time SUM all-reduces of `mib` MiB of float32 per replica, many per traced call, one host sync per call;
    the per-operation time, and nccl-tests' algbw and busbw from it."""
    replicas = int(strategy.num_replicas_in_sync)
    elements = max(1, int(mib * 2**20) // 4)
    size_bytes = elements * 4
    report = BandwidthRecord(
        ran=True,
        replicas=replicas,
        size_bytes=size_bytes,
        method="all-reduces chained in one tf.function (tf.while_loop around strategy.run), one host sync"
        " per call",
        implementation=describe_cross_device_ops(strategy)["name"],
    )
    if replicas < 2:
        # Nothing crosses a device boundary (and TensorFlow rejects the cross-device call with no peers).
        return {**report, "ran": False, "ok": True, "reason": "one replica: no data moves between devices"}

    fixed = local_replicas(strategy) != replicas  # several workers: counts agreed without talking
    try:
        buffers = per_replica_values(tf, strategy, lambda i: tf.zeros([elements]))
        loop = chained_all_reduce(tf, strategy)
        _timed_call(tf, strategy, loop, buffers, 1)  # tracing and collective setup are not bandwidth
        if fixed:
            count: int | None = MULTI_WORKER_COUNT
            repeats = MULTI_WORKER_CALLS
        else:
            probe = _timed_call(tf, strategy, loop, buffers, PROBE_COUNT) / PROBE_COUNT
            count = loop_count(probe, TIMED_CALLS, deadline - time.monotonic())
            repeats = TIMED_CALLS
        if count is None:
            return {**report, "ran": False, "ok": True, "reason": "no time left before the deadline"}
        calls = [_timed_call(tf, strategy, loop, buffers, count) for _ in range(repeats)]
    except Exception as error:
        return {**report, "ok": False, "error": f"{type(error).__name__}: {error}"}
    seconds = statistics.median(calls) / count
    algbw = size_bytes / seconds / 1e9
    return {
        **report,
        "ok": True,
        "per_call": count,
        "calls": repeats,
        "call_s": calls,
        "iterations": count * repeats,  # all-reduces timed
        "time_s": seconds,  # per all-reduce: the median call's time divided by its count
        "algbw_gbps": algbw,
        "busbw_gbps": bus_bandwidth(algbw, replicas),
    }
