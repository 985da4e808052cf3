"""A first start on GPUs TensorFlow reaches only through PTX: CUDA's JIT cache as read for this process, the
up-front warning with the cost and the cache (recorded NVML facts of H100 / H200 hosts and TensorFlow 2.21's
recorded build info: sm_60/70/80/89 code, compute_90 PTX), and a deadline that ends during that compile."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import hosts
from test_smoke_checks import _records, _run
from tfdist_validate import pipeline
from tfdist_validate.checks import smoke_verdicts
from tfdist_validate.context import Context, Deadline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.jit_cache import CUDA_DEFAULT_MAXSIZE, read_jit_cache
from tfdist_validate.result import CheckResult
from tfdist_validate.runner import run_checks
from tfdist_validate.settings import Settings

H200 = ("nvidia-smi-query-csv_h200_590.48.01.csv", "nvidia-smi_h200_590.48.01.txt")
# /proc/self/mounts lines as a pod has them (the format of proc(5))
MOUNTS = (
    "overlay / overlay rw,relatime,lowerdir=/a,upperdir=/b,workdir=/c 0 0\n"
    "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
    "/dev/nvme0n1p1 /cuda-cache ext4 rw,relatime 0 0\n"
)


def test_the_cache_named_by_cuda_cache_path(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    (cache_dir / "a").mkdir(parents=True)
    (cache_dir / "index").write_bytes(b"x" * 100)
    (cache_dir / "a" / "entry").write_bytes(b"y" * 28)
    mounts = f"{MOUNTS}/dev/sdb1 {tmp_path} xfs rw 0 0\n"
    env = {"CUDA_CACHE_PATH": str(cache_dir), "CUDA_CACHE_MAXSIZE": "4294967296", "HOME": "/nowhere"}
    cache = read_jit_cache(env, mounts)
    assert (cache.path, cache.path_source, cache.exists, cache.writable) == (
        str(cache_dir),
        "CUDA_CACHE_PATH",
        True,
        True,
    )
    assert (cache.used_bytes, cache.maxsize_bytes, cache.filesystem) == (128, 4 << 30, "xfs")
    assert cache.warm and cache.usable and not cache.disabled


def test_the_default_cache_under_home_and_what_cuda_defaults_to(tmp_path: Path) -> None:
    cache = read_jit_cache({"HOME": str(tmp_path)}, "")
    assert cache.path == str(tmp_path / ".nv" / "ComputeCache")
    assert (cache.exists, cache.writable, cache.used_bytes, cache.warm) == (False, True, 0, False)
    assert cache.maxsize_bytes is None and cache.maxsize_effective == CUDA_DEFAULT_MAXSIZE
    nowhere = read_jit_cache({}, "")
    assert nowhere.path is None and not nowhere.usable


def test_a_cache_that_cannot_be_written_or_is_switched_off(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = read_jit_cache({"CUDA_CACHE_PATH": str(blocker / "cache"), "CUDA_CACHE_MAXSIZE": "big"}, "")
    assert not cache.writable and not cache.usable
    assert (cache.maxsize_bytes, cache.maxsize_text) == (None, "big")
    off = read_jit_cache({"CUDA_CACHE_PATH": str(tmp_path), "CUDA_CACHE_DISABLE": "1"}, "")
    assert off.disabled and not off.usable


def test_the_mount_that_holds_the_cache_decides_how_long_it_lives(tmp_path: Path) -> None:
    from tfdist_validate.host.jit_cache import _mount_type

    assert _mount_type(Path("/cuda-cache/x"), MOUNTS) == "ext4"
    assert _mount_type(Path("/root/.nv/ComputeCache"), MOUNTS) == "overlay"
    assert _mount_type(Path("/dev/shm/c"), MOUNTS) == "tmpfs"
    assert _mount_type(Path("/cuda-cachex"), MOUNTS) == "overlay"  # a prefix of a name is not a parent


def _h200_check(tmp_path: Path, env: dict[str, str], **options: str) -> hosts.CheckRun:
    host = hosts.kubernetes_pod(tmp_path / "root", gpus=True)
    host = replace(host, env={**host.env, **env})
    probe_set = hosts.probes(hosts.nvml_query_csv(*H200, count=2), tf=hosts.recorded_tf(gpus=2))
    return hosts.run_check(host, probe_set, tmp_path, **options)


def test_h200_says_up_front_what_the_first_start_costs_and_what_the_cache_lacks(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    result = _h200_check(tmp_path, {"CUDA_CACHE_PATH": str(cache_dir)})
    check = result.check("tensorflow.compute_cap")
    assert result.code == 0 and check["status"] == "warn"
    summary = check["summary"]
    assert "compute capability 9.0) via PTX compute_90" in summary
    assert "TensorFlow's own log: 'could take 30 minutes or longer'" in summary
    assert f"JIT cache {cache_dir} (writable, empty, up to 1 GiB (CUDA's default)" in summary
    assert "--timeout" not in summary  # `check` runs no kernel: its deadline is not the first start's
    assert "raise CUDA_CACHE_MAXSIZE to 4294967296" in check["hint"]
    jit = result.report["tensorflow"]["ptx_jit"]  # the report field
    assert jit["compute_capabilities"] == ["9.0"] and jit["cache_warm"] is False
    assert jit["first_start_timeout_s"] == 2400 and jit["timeout_s"] is None
    assert "tensorflow.compute_cap" in result.stderr and "30 minutes or longer" in result.stderr  # printed


def test_a_warm_large_cache_and_a_long_enough_deadline_need_nothing_more(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "index").write_bytes(b"z" * 4096)
    env = {"CUDA_CACHE_PATH": str(cache_dir), "CUDA_CACHE_MAXSIZE": str(4 << 30)}
    result = _h200_check(tmp_path, env, timeout="2400")
    check = result.check("tensorflow.compute_cap")
    assert check["status"] == "warn"  # still a JIT start: said, never hidden
    assert "holds kernels from an earlier start" in check["summary"]
    assert "may end during that compile" not in check["summary"]
    assert "CUDA_CACHE_MAXSIZE" not in " ".join(result.report["tensorflow"]["ptx_jit"]["cache_fixes"])


def test_native_kernels_have_no_jit_field(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_two_healthy(), tf=hosts.recorded_tf(gpus=2))
    result = hosts.run_check(hosts.docker_with_toolkit(tmp_path / "root"), probe_set, tmp_path)
    assert result.check("tensorflow.compute_cap")["status"] == "pass"
    assert "ptx_jit" not in result.report["tensorflow"]


def _gpu_ctx(tmp_path: Path, nvml: object, env: dict[str, str]) -> tuple[Context, list[CheckResult]]:
    """The context of a `run` after its host layers (the smoke checks read their facts), and their results."""
    host = hosts.docker_with_toolkit(tmp_path / "root")
    probe_set = hosts.probes(nvml, tf=hosts.recorded_tf(gpus=2))  # type: ignore[arg-type]
    settings = Settings(root=str(host.root))
    ctx = Context(settings, "run", {**host.env, **env}, Deadline.after(60), probe_set.probes, tf=probe_set.tf)
    return ctx, run_checks(pipeline.host_checks(), ctx)


def test_a_deadline_during_the_first_compile_is_50_that_says_so(tmp_path: Path) -> None:
    """H100s, a cold cache, and the deadline ends in fit: still 50 (nothing was proven), but the summary and
    hint say it was the first start's JIT, with what makes the next start fast, not only 'a hang'."""
    cold = tmp_path / "cold"
    ctx, results = _gpu_ctx(tmp_path, hosts.nvml_h100s(), {"CUDA_CACHE_PATH": str(cold)})
    # said up front, in `run`: the default --timeout leaves no room for a first start
    up_front = next(r for r in results if r.id == "tensorflow.compute_cap")
    assert (
        "--timeout 600 s may end during that compile: give a first start --timeout 2400" in up_front.summary
    )
    run = _run(_records(drop_from="fit"), timed_out=True, returncode=-9, tmp=tmp_path)
    outcome = smoke_verdicts.missing("fit", run, ctx)
    assert outcome.code == ExitCode.TIMEOUT
    assert "TensorFlow has only PTX for compute capability 9.0" in outcome.summary
    assert f"the JIT cache {cold} (writable, empty" in outcome.summary and "was cold" in outcome.summary
    assert outcome.hint.startswith(
        "a first start on these GPUs compiles for up to half an hour: run once with"
    )
    assert "--timeout 2400" in outcome.hint and "NCCL_DEBUG=INFO" in outcome.hint  # a hang stays possible
    assert outcome.details["ptx_jit_first_start"] is True


def test_a_deadline_on_native_gpus_stays_a_hang(tmp_path: Path) -> None:
    ctx, _ = _gpu_ctx(tmp_path, hosts.nvml_two_healthy(), {})
    run = _run(_records(drop_from="fit"), timed_out=True, returncode=-9, tmp=tmp_path)
    outcome = smoke_verdicts.missing("fit", run, ctx)
    assert outcome.code == ExitCode.TIMEOUT
    assert "PTX" not in outcome.summary and "ptx_jit_first_start" not in outcome.details
