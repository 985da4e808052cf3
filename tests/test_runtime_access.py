"""The runtime layer tells apart driver libraries never injected from ones the loader cannot find."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hosts

REPO = Path(__file__).resolve().parent.parent


def test_gke_layout_off_the_loader_path_is_told_apart_from_never_injected(tmp_path: Path) -> None:
    result = hosts.run_check(hosts.gke_pod_without_loader_path(tmp_path / "gke"), hosts.probes(), tmp_path)
    check = result.check("runtime.gpu_access")
    assert result.code == 11
    assert "injected at /usr/local/nvidia/lib64, which the dynamic loader does not search" in check["summary"]
    assert "LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64" in check["hint"]
    assert "--gpus" not in check["hint"]


def test_gke_layout_on_the_images_loader_path_passes(tmp_path: Path) -> None:
    probe_set = hosts.probes(hosts.nvml_h100s(), tf=hosts.recorded_tf(gpus=2))
    result = hosts.run_check(hosts.kubernetes_pod(tmp_path / "root", gpus=True), probe_set, tmp_path)
    assert result.check("runtime.gpu_access")["status"] == "pass"


def test_the_image_puts_gkes_driver_mount_on_the_loader_path_and_path() -> None:
    env = re.search(r"^ENV (?:.*\\\n)*.*$", (REPO / "Dockerfile").read_text(), re.M)
    assert env, "no ENV block"
    values = dict(re.findall(r"(\w+)=(\S+)", env.group(0)))
    assert values["LD_LIBRARY_PATH"] == hosts.IMAGE_LD_LIBRARY_PATH
    assert "/usr/local/nvidia/bin" in values["PATH"].split(":")


# proc(5)'s /proc/self/status lines for the image's user (uid 10001); no real listing of nodes with
# NVreg_DeviceFileMode=0660 was found (the real `ls -l /dev/nvidia*` captures show 0666): the mode is set here
def _image_user(host: hosts.Host, groups: str) -> hosts.Host:
    status = "Name:\ttfdist-validate\nUid:\t10001\t10001\t10001\t10001\nGid:\t10001\t10001\t10001\t10001\n"
    hosts.HostTree(host.root).file("/proc/self/status", f"{status}Groups:\t{groups}\n")
    return host


def _mode(host: hosts.Host, mode: int) -> int:
    nodes = sorted((host.root / "dev").glob("nvidia*"))
    for node in nodes:
        node.chmod(mode)
    return nodes[0].stat().st_gid


@pytest.mark.parametrize(
    ("mode", "in_group", "code"), [(0o660, False, 11), (0o660, True, 0), (0o666, False, 0)]
)
def test_device_nodes_the_non_root_user_may_not_open(
    tmp_path: Path, mode: int, in_group: bool, code: int
) -> None:
    host = hosts.docker_one_gpu(tmp_path / "root")  # the real in-container listing (0666)
    gid = _mode(host, mode)
    _image_user(host, f"10001 {gid}" if in_group else "10001")
    probe_set = hosts.probes(hosts.nvml_h100s(1), tf=hosts.recorded_tf(gpus=1))
    result = hosts.run_check(host, probe_set, tmp_path, min_gpus="1")
    check = result.check("runtime.gpu_access")
    assert result.code == code
    if code:
        assert f"mode 0660, group {gid}, and this process (uid 10001, groups 10001)" in check["summary"]
        assert f"--group-add {gid}" in check["hint"] and "keep-groups" in check["hint"]
        assert "--gpus" not in check["hint"]


def test_root_only_nodes_cuda_does_not_open_are_not_judged(tmp_path: Path) -> None:
    """MIG's /dev/nvidia-caps (a folder; nvidia-cap1 is root-only by design) and nvidia-modeset are not what
    CUDA opens: a non-root run beside them is fine when the GPU nodes, nvidiactl and nvidia-uvm are 0666."""
    host = _image_user(hosts.docker_one_gpu(tmp_path / "root"), "10001")
    _mode(host, 0o666)  # as the real in-container listing shows them
    tree = hosts.HostTree(host.root).dir("/dev/nvidia-caps").file("/dev/nvidia-caps/nvidia-cap1")
    (host.root / "dev" / "nvidia-caps" / "nvidia-cap1").chmod(0o400)
    (host.root / "dev" / "nvidia-caps").chmod(0o555)
    tree.file("/dev/nvidia-modeset")
    (host.root / "dev" / "nvidia-modeset").chmod(0o600)
    probe_set = hosts.probes(hosts.nvml_h100s(1), tf=hosts.recorded_tf(gpus=1))
    result = hosts.run_check(host, probe_set, tmp_path, min_gpus="1")
    check = result.check("runtime.gpu_access")
    assert check["status"] == "pass", check["summary"]
