"""The runtime layer tells apart driver libraries never injected from ones the loader cannot find."""

from __future__ import annotations

import re
from pathlib import Path

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
