"""The image's shell scripts, run for real: the host preflight over fake hosts built in a temp dir (recorded
real driver and nvidia-smi outputs), and the entrypoint in front of the real CLI.

The image itself (Dockerfile, tini, SIGTERM, exit 11 without GPUs) is tested by `make test-image`.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "tests" / "fixtures" / "real"
PREFLIGHT = REPO / "entrypoint" / "host-preflight.sh"
ENTRYPOINT = REPO / "entrypoint" / "docker-entrypoint.sh"
DOCKER_GPU_ERROR = (REAL / "docker-error_no-gpu-device-driver.txt").read_text().strip()

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the scripts are bash")


@dataclass
class Host:
    """A fake GPU host: `root` holds /proc, /dev and /etc/cdi; `bin`, the commands the preflight calls."""

    root: Path
    bin: Path

    def file(self, path: str, text: str = "") -> None:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def command(self, name: str, stdout: str = "", exit_code: int = 0, *, when: str = "") -> None:
        """`name` prints `stdout` verbatim when its arguments start with `when` (any, if empty).

        Calling it again for other arguments adds a case; arguments matching no case exit 127."""
        cases = self.bin / f"{name}.cases"
        index = len(cases.read_text().splitlines()) if cases.exists() else 0
        (self.bin / f"{name}.{index}.out").write_text(stdout)
        with cases.open("a") as table:
            table.write(f'    "{when}"*) cat "{self.bin / f"{name}.{index}.out"}"; exit {exit_code} ;;\n')
        script = self.bin / name
        script.write_text(f'#!/bin/sh\ncase "$*" in\n{cases.read_text()}esac\nexit 127\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    made = Host(tmp_path / "root", tmp_path / "bin")
    made.root.mkdir()
    made.bin.mkdir()
    return made


def _gpu_host(host: Host) -> None:
    """Bare metal with an H100, driver 565.57.01 (open module) and the container toolkit installed."""
    host.file(
        "/proc/driver/nvidia/version",
        (REAL / "proc-driver-nvidia-version_open-x86_64_565.57.01_ubuntu24.04.txt").read_text(),
    )
    host.file("/dev/nvidia0")
    host.file("/dev/nvidiactl")
    host.file("/dev/nvidia-uvm")
    host.command("nvidia-smi", (REAL / "nvidia-smi-L_h100_590.48.01.txt").read_text())
    host.command("nvidia-container-runtime-hook")


def preflight(host: Host, *args: str) -> subprocess.CompletedProcess[str]:
    # Only the fake commands and the basic tools: the machine's own docker or nvidia-smi must not leak in.
    env = {"PATH": f"{host.bin}:/usr/bin:/bin", "HOME": str(host.root), "LC_ALL": "C"}
    return subprocess.run(
        ["bash", str(PREFLIGHT), "--root", str(host.root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_a_ready_host_passes_with_the_driver_version_and_gpu_count(host: Host) -> None:
    _gpu_host(host)
    # `nvidia-ctk --version` as printed by toolkit 1.17.8 (tests/fixtures/real/SOURCES.md)
    host.command(
        "nvidia-ctk",
        "NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d\n",
    )
    host.command("docker", "default\n", when="context show")
    host.command(
        "docker", "io.containerd.runc.v2 nvidia runc \n", when="info"
    )  # our --format template's output
    host.file("/etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\n")
    done = preflight(host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  NVIDIA kernel driver loaded: 565.57.01" in done.stdout
    assert "PASS  nvidia-smi lists 1 GPU(s)" in done.stdout
    assert "PASS  NVIDIA Container Toolkit: NVIDIA Container Toolkit CLI version 1.17.8\n" in done.stdout
    assert "PASS  docker knows the nvidia runtime" in done.stdout
    assert "FAIL" not in done.stdout
    assert done.stdout.rstrip().endswith("ready: docker run --rm --gpus all tfdist-validate (0 warning(s))")


def test_without_the_toolkit_it_explains_the_docker_gpu_error(host: Host) -> None:
    _gpu_host(host)
    (host.bin / "nvidia-container-runtime-hook").unlink()
    done = preflight(host)
    assert done.returncode == 11, done.stdout
    assert "FAIL  nvidia-container-runtime-hook is not on PATH" in done.stdout
    # The exact words docker prints (a recorded real error), so a user can search for them here.
    assert 'could not select device driver "" with capabilities: [[gpu]]' in DOCKER_GPU_ERROR
    assert 'could not select device driver "" with capabilities: [[gpu]]' in done.stdout
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in done.stdout


def test_no_driver_is_exit_10_and_outranks_the_toolkit(host: Host) -> None:
    done = preflight(host)
    assert done.returncode == 10, done.stdout
    assert "FAIL  no NVIDIA kernel driver" in done.stdout
    assert "FAIL  nvidia-container-runtime-hook is not on PATH" in done.stdout
    assert "not ready: no NVIDIA driver on this host (exit 10)" in done.stdout


def test_a_failing_nvidia_smi_shows_its_own_message(host: Host) -> None:
    _gpu_host(host)
    recorded = (REAL / "nvidia-smi-error_no-driver-communication.txt").read_text()
    (host.bin / "nvidia-smi.cases").unlink()
    host.command("nvidia-smi", recorded, exit_code=9)
    done = preflight(host)
    assert done.returncode == 10
    assert f"FAIL  nvidia-smi failed: {recorded.splitlines()[0]}" in done.stdout


def test_wsl2_counts_dxg_as_the_driver(host: Host) -> None:
    host.file("/dev/dxg")
    host.command("nvidia-container-runtime-hook")
    done = preflight(host)
    assert done.returncode == 0, done.stdout
    assert "PASS  WSL2 GPU paravirtualization (/dev/dxg)" in done.stdout


def test_docker_without_the_nvidia_runtime_is_a_warning(host: Host) -> None:
    _gpu_host(host)
    host.command("docker", "default\n", when="context show")
    host.command("docker", "io.containerd.runc.v2 runc \n", when="info")
    done = preflight(host)
    assert done.returncode == 0
    assert "WARN  docker has no 'nvidia' runtime (runtimes: io.containerd.runc.v2 runc)" in done.stdout


def test_preflight_rejects_an_unknown_argument(host: Host) -> None:
    done = preflight(host, "--bogus")
    assert done.returncode == 2
    assert "unknown argument '--bogus'" in done.stderr


# ---- the entrypoint, in front of the real CLI -----------------------------------------------------------


def entrypoint(*args: str) -> subprocess.CompletedProcess[str]:
    cli_dir = Path(sys.executable).parent  # the venv running the tests has `tfdist-validate`
    env = {**os.environ, "PATH": f"{cli_dir}:/usr/bin:/bin", "TFDIST_IMAGE_VERSION": "9.9.9-test"}
    return subprocess.run(
        ["bash", str(ENTRYPOINT), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_entrypoint_passes_arguments_and_keeps_stdout_for_the_cli() -> None:
    done = entrypoint("exit-codes", "--json")
    assert done.returncode == 0
    codes = json.loads(done.stdout)  # stdout is the CLI's alone
    assert {"code": 11, "name": "CONTAINER_NO_GPU"}.items() <= next(
        c for c in codes if c["code"] == 11
    ).items()
    assert (
        done.stderr
        == "tfdist-entrypoint: image 9.9.9-test (revision unknown): tfdist-validate exit-codes --json\n"
    )


def test_entrypoint_accepts_a_pasted_command_line() -> None:
    done = entrypoint("tfdist-validate", "--version")
    assert done.returncode == 0
    assert done.stdout.startswith("tfdist-validate ")


def test_entrypoint_runs_other_programs_and_rejects_unknown_words() -> None:
    assert entrypoint("true").returncode == 0
    done = entrypoint("no-such-command")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "'no-such-command' is neither a tfdist-validate command nor a program" in done.stderr


def _toolkit_host_with_dockerd(host: Host) -> None:
    """A ready host whose dockerd (pid 4242) has run for 10^9 s: any hook file is newer than its start,
    as after a toolkit package upgrade (no wall-clock dependence: 10^9 s is before any file's ctime)."""
    _gpu_host(host)
    host.command("nvidia-ctk", "NVIDIA Container Toolkit CLI version 1.17.8\n")
    host.command("docker", "default\n", when="context show")
    host.command("docker", "io.containerd.runc.v2 nvidia runc \n", when="info")
    host.file("/etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\n")
    host.command("pgrep", "4242\n")
    host.command("ps", "1000000000\n")


def test_a_hook_newer_than_dockerd_is_a_warning_not_a_failure(host: Host) -> None:
    """A toolkit upgrade changes the hook's ctime while `--gpus` keeps working: the time proves nothing."""
    _toolkit_host_with_dockerd(host)
    done = preflight(host)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARN  nvidia-container-runtime-hook changed after dockerd (pid 4242) started" in done.stdout


def test_docker_run_saying_no_device_driver_is_exit_11(host: Host) -> None:
    """The proof that cannot drift: docker's own answer to --gpus (its real error text)."""
    _toolkit_host_with_dockerd(host)
    host.command("docker", DOCKER_GPU_ERROR + "\n", 125, when="run")
    done = preflight(host, "--image", "tfdist-validate:test")
    assert done.returncode == 11, done.stdout + done.stderr
    assert "FAIL  dockerd has no GPU device driver" in done.stdout
