"""Time to verdict: `tfdist-validate run --cpu-replicas 2` against the reference smoke test, and two workers
of `run --cpu-replicas 1` on loopback ports (one MultiWorkerMirroredStrategy cluster) against two workers of
the reference adapted to that strategy (reference_multiworker.py); all four one after the other, every run.

Prints min / median / max wall time and peak RSS for each command, the ratios of the medians, and the machine.
A two-worker command starts both workers together and ends when both have exited; its peak RSS and CPU time
are those of both process trees together. Peak RSS is the largest sum over the whole process tree (the
validator and its TensorFlow child together), sampled from /proc every 20 ms, so a command cannot look small
by moving its work into a child process.
CPU time (user + system of the whole tree) is printed too: on a machine shared with other jobs it varies
less than wall time, and it shows whether a gain is less work or only more overlap.

Then (or only, with --diagnose-only) the `diagnose` scan of a big training log against plain line iteration
(benchmarks/diagnose_scan.py), and the bandwidth check's all-reduce figure against the same collective timed
inside one traced call (benchmarks/allreduce_loop.py, in its own process).

Usage: python benchmarks/bench.py [--runs N] [--diagnose-mb MB] [--diagnose-only]   (make bench)
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import importlib.util
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_TIME_RATIO = 0.8
TARGET_RSS_RATIO = 1.2


@dataclass
class Sample:
    wall_s: float
    peak_rss_mib: float
    returncode: int
    cpu_s: float  # user + system time of the whole tree (every descendant is reaped by its parent)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # the task may have exited meanwhile
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _tree_rss_kib(root: int) -> int:
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
        stack += _children(pid)
    return total


# What one command starts: (argv, env) of each process, all started together.
Launch = list[tuple[list[str], dict[str, str]]]


def measure(launch: Launch) -> Sample:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        for argv, env in launch
    ]
    peak = 0
    while any(proc.poll() is None for proc in procs):
        peak = max(peak, sum(_tree_rss_kib(proc.pid) for proc in procs))
        time.sleep(0.02)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # a cluster's verdict is every worker's: the first non-zero exit status, else 0
    returncode = next((proc.returncode for proc in procs if proc.returncode != 0), 0)
    return Sample(wall, peak / 1024, returncode, cpu)


def one_process(argv: list[str]) -> Callable[[dict[str, str]], Launch]:
    return lambda env: [(argv, env)]


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def loopback_workers(argv: list[str], count: int = 2) -> Callable[[dict[str, str]], Launch]:
    """`count` copies of argv, each with a TF_CONFIG naming the same cluster on fresh loopback ports."""

    def launch(env: dict[str, str]) -> Launch:
        workers = [f"127.0.0.1:{port}" for port in free_ports(count)]
        configs = [
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}} for i in range(count)
        ]
        return [(argv, {**env, "TF_CONFIG": json.dumps(config)}) for config in configs]

    return launch


def describe(samples: list[Sample]) -> str:
    walls = [s.wall_s for s in samples]
    rss = [s.peak_rss_mib for s in samples]
    cpu = [s.cpu_s for s in samples]
    return (
        f"wall s min {min(walls):6.2f}  median {statistics.median(walls):6.2f}  max {max(walls):6.2f}   "
        f"peak RSS MiB min {min(rss):7.1f}  median {statistics.median(rss):7.1f}  max {max(rss):7.1f}   "
        f"CPU s median {statistics.median(cpu):6.2f}"
    )


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor() or "unknown CPU",
    )
    mem_kib = int(
        next(
            line.split()[1]
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    )
    python = f"Python {platform.python_version()}"
    return f"{cpu}; {os.cpu_count()} CPUs; {mem_kib / 1048576:.1f} GiB; {python}; {platform.platform()}"


def compile_package() -> str:
    """Byte-compile tfdist_validate as `pip install` does. An editable install has no bytecode, and with
    PYTHONDONTWRITEBYTECODE set (as on the development machine) every run would compile ~50 modules again."""
    spec = importlib.util.find_spec("tfdist_validate")
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        return "tfdist_validate not found"
    done = all(compileall.compile_dir(folder, quiet=1) for folder in folders)
    return "bytecode compiled first, as pip does at install" if done else "bytecode could not be compiled"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="paired runs (default 5)")
    parser.add_argument("--diagnose-mb", type=int, default=100, help="size of the diagnose scan log (MB)")
    parser.add_argument("--diagnose-only", action="store_true", help="only the diagnose scan case")
    args = parser.parse_args()
    if args.runs < 1 or args.diagnose_mb < 1:
        parser.error("--runs and --diagnose-mb must be at least 1")
    print(f"machine: {machine()}")
    sys.path.insert(0, str(HERE))
    import diagnose_scan

    diagnose_ok = diagnose_scan.run(args.diagnose_mb, min(args.runs, 3))
    if args.diagnose_only:
        return 0 if diagnose_ok else 1
    allreduce = subprocess.run(
        [sys.executable, str(HERE / "allreduce_loop.py"), "--runs", str(args.runs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # TensorFlow's log
        text=True,
        check=False,
    )
    print(allreduce.stdout, end="")
    cases_ok = diagnose_ok and allreduce.returncode == 0

    env = {k: v for k, v in os.environ.items() if not k.startswith("TFDIST_")}
    env.update(NO_COLOR="1", TFDIST_TERMINATION_LOG="/dev/null")
    env.pop("TF_CONFIG", None)
    ours = [sys.executable, "-m", "tfdist_validate", "run"]
    # (ours, reference) pairs; the ratio of each pair is printed
    pairs = [
        (
            ("tfdist-validate run --cpu-replicas 2", one_process([*ours, "--cpu-replicas", "2"])),
            (
                "reference smoke test (2 logical CPUs)",
                one_process([sys.executable, str(HERE / "reference_smoke.py"), "2"]),
            ),
        ),
        (
            (
                "2 workers: tfdist-validate run --cpu-replicas 1",
                loopback_workers([*ours, "--cpu-replicas", "1"]),
            ),
            (
                "2 workers: reference, MultiWorkerMirroredStrategy",
                loopback_workers([sys.executable, str(HERE / "reference_multiworker.py")]),
            ),
        ),
    ]
    commands = dict(command for pair in pairs for command in pair)
    print(
        f"method: {args.runs} runs of each command, the four one after the other; peak RSS and CPU time of"
        f" the whole process tree (both workers' trees for a cluster); tfdist_validate: {compile_package()}"
    )
    samples: dict[str, list[Sample]] = {name: [] for name in commands}
    for i in range(args.runs):
        for name, launch in commands.items():
            sample = measure(launch(env))
            samples[name].append(sample)
            figures = (
                f"{sample.wall_s:.2f} s, {sample.peak_rss_mib:.0f} MiB, CPU {sample.cpu_s:.2f} s,"
                f" exit {sample.returncode}"
            )
            print(f"  run {i + 1}: {name}: {figures}")
    for name in commands:
        print(f"{name}\n    {describe(samples[name])}")
    for index, ((ours_name, _), (ref_name, _)) in enumerate(pairs):
        # the targets are the single-host run's; the cluster's ratio is reported, not judged
        print_ratios(ours_name, samples[ours_name], samples[ref_name], targets=index == 0)
    failed_runs = [s for runs in samples.values() for s in runs if s.returncode != 0]
    if failed_runs:
        print(
            f"warning: {len(failed_runs)} run(s) exited non-zero; the figures above are not a healthy verdict"
        )
        return 1
    return 0 if cases_ok else 1


def print_ratios(name: str, ours: list[Sample], ref: list[Sample], targets: bool) -> None:
    time_ratio = statistics.median(s.wall_s for s in ours) / statistics.median(s.wall_s for s in ref)
    rss_ratio = statistics.median(s.peak_rss_mib for s in ours) / statistics.median(
        s.peak_rss_mib for s in ref
    )
    time_target = f"  (target <= {TARGET_TIME_RATIO})" if targets else ""
    rss_target = f"  (target <= {TARGET_RSS_RATIO})" if targets else ""
    print(f"{name}, median ours / median reference:")
    print(f"    time ratio {time_ratio:.2f}{time_target}")
    print(f"    peak RSS ratio {rss_ratio:.2f}{rss_target}")


if __name__ == "__main__":
    sys.exit(main())
