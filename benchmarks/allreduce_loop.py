"""The bandwidth check's figure against the same collective timed inside one traced call.

On 2 logical CPU devices at 1 MiB (issue 14's case), in one fresh TensorFlow process:
- ours: smoke/child_checks.allreduce_bandwidth, exactly as the smoke child calls it (its busbw);
- reference: 20 chained SUM all-reduces unrolled in one tf.function, one host sync, the call's time / 20
  (the median of several calls);
- for the record, the method the check used before: one tf.function dispatch and one host sync per
  all-reduce (the median round).
The runs alternate ours / reference, so a machine busy with other work slows both alike. Target: ours'
busbw >= 0.8x the reference's (the ratio of the medians).

Usage: python benchmarks/allreduce_loop.py [--runs N] [--mib MIB]   (also run by bench.py, `make bench`)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

TARGET_RATIO = 0.8
REFERENCE_COUNT = 20
REFERENCE_CALLS = 5


def _setup(tf: Any) -> Any:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def _reference(tf: Any, strategy: Any, buffers: Any) -> Any:
    def one(value: Any) -> Any:
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(value))

    @tf.function  # type: ignore[untyped-decorator]
    def unrolled(values: Any) -> Any:
        for _ in range(REFERENCE_COUNT):
            values = strategy.run(one, args=(values,))
        return values

    return unrolled


def _wait(strategy: Any, outputs: Any) -> None:
    for tensor in strategy.experimental_local_results(outputs):
        tensor[:1].numpy()


def _per_op(strategy: Any, call: Any, count: int, calls: int) -> float:
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        _wait(strategy, call())
        times.append(time.perf_counter() - began)
    return statistics.median(times) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=float, default=1.0)
    args = parser.parse_args()
    import tensorflow as tf

    from tfdist_validate.smoke import child_checks

    strategy = _setup(tf)
    elements = int(args.mib * 2**20) // 4
    buffers = child_checks.per_replica_values(tf, strategy, lambda i: tf.zeros([elements]))
    reference = _reference(tf, strategy, buffers)
    single = child_checks.sum_across_replicas(tf, strategy)
    _wait(strategy, reference(buffers))  # tracing is not bandwidth
    _wait(strategy, single(buffers))
    size = elements * 4
    ours, theirs, old = [], [], []
    for i in range(args.runs):
        record = child_checks.allreduce_bandwidth(tf, strategy, args.mib, time.monotonic() + 60)
        if not record.get("ok") or "busbw_gbps" not in record:
            print(f"  run {i + 1}: the bandwidth check did not measure: {record}")
            return 1
        ref_s = _per_op(strategy, lambda: reference(buffers), REFERENCE_COUNT, REFERENCE_CALLS)
        old_s = _per_op(strategy, lambda: single(buffers), 1, REFERENCE_COUNT)
        # busbw = algbw * 2(n-1)/n = algbw for n = 2
        ours.append(record["busbw_gbps"])
        theirs.append(size / ref_s / 1e9)
        old.append(size / old_s / 1e9)
        print(
            f"  allreduce run {i + 1}: {args.mib:g} MiB on 2 logical CPUs: check {ours[-1]:.2f} GB/s"
            f" ({record['calls']} calls of {record['per_call']}, {record['time_s'] * 1e3:.3f} ms each);"
            f" in-call reference {theirs[-1]:.2f} GB/s ({ref_s * 1e3:.3f} ms);"
            f" one all-reduce per call {old[-1]:.2f} GB/s ({old_s * 1e3:.3f} ms)"
        )
    ratio = statistics.median(ours) / statistics.median(theirs)
    old_ratio = statistics.median(old) / statistics.median(theirs)
    print(
        f"all-reduce busbw, median check / median in-call reference: {ratio:.2f}  (target >= {TARGET_RATIO});"
        f" one all-reduce per call: {old_ratio:.2f}"
    )
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
