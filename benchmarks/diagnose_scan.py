"""`diagnose` scan speed on a big training log, as a ratio to plain Python iterating over the file's lines.

The log (written to a temp dir, seeded, so every run reads the same bytes): Keras progress lines, device-
creation and NUMA notices as a multi-GPU TensorFlow job prints them, one out-of-memory line at the end. Both
timings are taken in this one process, start-up excluded, so the ratio does not depend on the machine's speed.
"""

from __future__ import annotations

import random
import resource
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 10.0
_DEVICE = (
    "2024-03-01 10:00:{s:02d}.{us:06d}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928]"
    " Created device /job:localhost/replica:0/task:0/device:GPU:{g} with 78938 MB memory:  -> device: {g},"
    " name: NVIDIA H100 80GB HBM3, pci bus id: 0000:{g:02x}:00.0, compute capability: 9.0\n"
)
_NUMA = (
    "2024-03-01 10:00:{s:02d}.{us:06d}: I external/local_xla/xla/stream_executor/cuda/cuda_executor.cc:984]"
    " successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA"
    " node, so returning NUMA node zero. See more at https://github.com/torvalds/linux/blob/v6.0/Documentation/ABI/testing"
    "/sysfs-bus-pci#L344-L355\n"
)
_FAILURE = (
    "2024-03-01 10:05:00.000000: W tensorflow/core/framework/op_kernel.cc:1839] OP_REQUIRES failed at"
    " xla_ops.cc:580 : RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.\n"
)


def write_log(path: Path, megabytes: int) -> None:
    rng = random.Random(7)
    target, size, n = megabytes << 20, 0, 0
    with open(path, "w", encoding="utf-8") as out:
        while size < target:
            r = rng.random()
            if r < 0.02:
                line = _DEVICE.format(s=n % 60, us=n % 999999, g=n % 8)
            elif r < 0.04:
                line = _NUMA.format(s=n % 60, us=n % 999999)
            elif r < 0.06:
                line = f"Epoch {n % 100 + 1}/100\n"
            else:
                step = n % 469 + 1
                bar = "=" * (step * 29 // 469) + ">" + "." * (29 - step * 29 // 469)
                metrics = f"loss: 0.{n % 9999:04d} - accuracy: 0.{n * 7 % 9999:04d}"
                line = f"{step}/469 [{bar}] - ETA: {n % 60}s - {metrics}\n"
            out.write(line)
            size += len(line)
            n += 1
        out.write(_FAILURE)


def _iterate_lines(path: Path) -> float:
    started = time.perf_counter()
    with open(path, "rb") as stream:
        for _ in stream:
            pass
    return time.perf_counter() - started


def _scan(path: Path) -> tuple[float, int]:
    from tfdist_validate.diagnose.engine import Matcher

    matcher = Matcher()  # the table is loaded and compiled before the clock starts, like start-up
    started = time.perf_counter()
    with open(path, "rb") as stream:
        matcher.feed_stream(stream, str(path))
    code = int(matcher.result().code)
    return time.perf_counter() - started, code


def run(megabytes: int, runs: int) -> bool:
    from tfdist_validate.diagnose.engine import Matcher

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.log"
        write_log(path, megabytes)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ratios = []
        for i in range(runs):
            floor = _iterate_lines(path)
            scan, code = _scan(path)
            ratios.append(scan / floor)
            print(
                f"  diagnose run {i + 1}: {megabytes} MB, line iteration {floor:.3f} s, scan {scan:.3f} s"
                f" ({megabytes / scan:.0f} MB/s), ratio {scan / floor:.1f}, exit {code}"
            )
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    ratio = sorted(ratios)[len(ratios) // 2]
    scanner = "RE2" if Matcher().scanner.fast else "bytes.find fallback (google-re2 missing)"
    print(
        f"diagnose scan ratio (median, scan / line iteration): {ratio:.1f}  (target <= {TARGET_RATIO:.0f});"
        f" peak RSS growth {growth:.0f} MiB; scanner: {scanner}"
    )
    return ratio <= TARGET_RATIO
