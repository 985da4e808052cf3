# ruff: noqa: E501  (one host per line reads best)
"""The host matrix: recorded hosts, each a replayable report with its expected verdict.

Each host is built from real public outputs (tests/fixtures/real/, SOURCES.md there): its tree from real
/proc and /dev listings, NVML answering from a real nvidia-smi capture, TensorFlow's facts from the real
probe's recording. `python tests/matrix.py` runs `check` on each and writes tests/fixtures/matrix/<id>.json
(and prints the README's "Supported hosts" table); test_matrix.py replays every file, as a user's report
would be replayed, and checks that a fresh recording still decides the same.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pynvml

import hosts

MATRIX_DIR = Path(__file__).resolve().parent / "fixtures" / "matrix"
TF = hosts.recorded_tf
H100 = "nvidia-smi-query-csv_h100_590.48.01.csv"
H200 = "nvidia-smi-query-csv_h200_590.48.01.csv"


@dataclass(frozen=True)
class MatrixHost:
    id: str
    what: str
    tree: Callable[[Path], hosts.Host]
    nvml: Callable[[], hosts.FakeNvml] | None
    tf: Callable[[], hosts.TfFacts] | None
    code: int
    sources: str
    smi: Callable = hosts.SMI_MISSING  # type: ignore[type-arg]
    options: dict[str, str] = field(default_factory=dict)

    def probes(self) -> hosts.ProbeSet:
        return hosts.probes(self.nvml() if self.nvml else None, self.smi, self.tf() if self.tf else None)


def _err(code: int) -> Callable[[], hosts.FakeNvml]:
    return lambda: hosts.nvml_failing(code)


def _gpus(n: int) -> Callable[[], hosts.TfFacts]:
    return lambda: TF(gpus=n)


ONE_GPU = {"min_gpus": "1"}
MATRIX = [
    MatrixHost("rtx2080s-rtx4080s-r595-docker", "RTX 2080 SUPER + RTX 4080 SUPER, driver 595.71.05 (CUDA 13.2), docker --gpus all", hosts.docker_with_toolkit, hosts.nvml_two_healthy, _gpus(2), 0, "nvidia_gpu_exporter captures (rtx-2080-super, rtx-4080-super __595.71.05)"),
    MatrixHost("h100x2-r590-docker", "2x H100 80GB HBM3, driver 590.48.01 (CUDA 13.1), docker", hosts.docker_with_toolkit, hosts.nvml_h100s, _gpus(2), 0, "nvidia_gpu_exporter capture h100-80gb-hbm3__590.48.01"),
    MatrixHost("h100x8-r535-kubernetes", "8x H100, driver 535.161.08 (CUDA 12.2), KubeRay pod: the build's cc 9.0 code is CUDA 12.5 PTX", lambda r: hosts.kubernetes_pod(r, gpus=True), hosts.nvml_h100x8_r535, _gpus(8), 13, "nebius/nebius-architect-solution-library kuberay README (nvidia-smi)"),
    MatrixHost("h200x2-r590-kubernetes", "2x H200, driver 590.48.01 (CUDA 13.1), Kubernetes pod", lambda r: hosts.kubernetes_pod(r, gpus=True), lambda: hosts.nvml_query_csv(H200, "nvidia-smi_h200_590.48.01.txt", 2), _gpus(2), 0, "nvidia_gpu_exporter capture h200__590.48.01"),
    MatrixHost("h100-mig-r590-docker", "H100 with MIG enabled (one CUDA device), docker", hosts.docker_one_gpu, hosts.nvml_mig, _gpus(1), 30, "nvidia_gpu_exporter capture h100-mig__590.48.01"),
    MatrixHost("a100-80gb-mig-r535-docker", "A100-SXM4-80GB with MIG enabled, driver 535.54.03 (CUDA 12.2)", hosts.docker_one_gpu, lambda: hosts.nvml_xml("nvidia-smi-q-x_a100-sxm4-80gb-mig_535.54.03.xml"), _gpus(1), 30, "telegraf testdata a100-sxm4-v12.xml (nvidia-smi -q -x)"),
    MatrixHost("t4-r515-docker", "Tesla T4, driver 515.105.01 (CUDA 11.7), docker", hosts.docker_with_toolkit, hosts.nvml_old_driver, _gpus(1), 13, "telegraf testdata tesla-t4.xml"),
    MatrixHost("t4-r515-gke", "Tesla T4, driver 515.105.01 (CUDA 11.7), GKE pod: driver at /usr/local/nvidia, on the loader path", lambda r: hosts.kubernetes_pod(r, gpus=True), hosts.nvml_old_driver, _gpus(1), 13, "telegraf testdata tesla-t4.xml; GKE's /usr/local/nvidia/lib64 layout"),
    MatrixHost("t4-gke-off-loader-path", "Tesla T4 on GKE in an image without /usr/local/nvidia on LD_LIBRARY_PATH", hosts.gke_pod_without_loader_path, hosts.nvml_old_driver, _gpus(1), 11, "telegraf testdata tesla-t4.xml; GKE's /usr/local/nvidia/lib64 layout"),
    MatrixHost("a10g-r515-docker", "A10G, driver 515.105.01 (CUDA 11.7), docker", hosts.docker_with_toolkit, lambda: hosts.nvml_xml("nvidia-smi-q-x_a10g_515.105.01.xml"), _gpus(1), 13, "telegraf testdata a10g.xml"),
    MatrixHost("a100-40gb-r550-host", "A100-SXM4-40GB, driver 550.144.03 (CUDA 12.4), bare host, --min-gpus 1", hosts.bare_host_with_driver, lambda: hosts.nvml_table("nvidia-smi_a100-sxm4-40gb_550.144.03.txt"), _gpus(1), 0, "windecks/triton-on-computecanada nvidia-smi.txt", options=ONE_GPU),
    MatrixHost("rtx3090-r535-host", "GeForce RTX 3090, driver 535.161.07 (CUDA 12.2), bare host, --min-gpus 1", hosts.bare_host_with_driver, lambda: hosts.nvml_table("nvidia-smi_rtx3090_535.161.07.txt"), _gpus(1), 0, "JasonGross/guarantees-based-mechanistic-interpretability-data nvidia-smi.txt", options=ONE_GPU),
    MatrixHost("rtx3080-r595-docker", "GeForce RTX 3080, driver 595.58.03 (CUDA 13.2), docker, --min-gpus 1", hosts.docker_with_toolkit, lambda: hosts.nvml_xml("nvidia-smi-q-x_rtx3080_595.58.03.xml"), _gpus(1), 0, "telegraf testdata rtx-3080-v13.xml", options=ONE_GPU),
    MatrixHost("l40s-r595-docker", "L40S, driver 595.80 (CUDA 13.2), docker, --min-gpus 1", hosts.docker_with_toolkit, lambda: hosts.nvml_query_csv("nvidia-smi-query-csv_l40s_595.80.csv", "nvidia-smi_l40s_595.80.txt"), _gpus(1), 0, "nvidia_gpu_exporter capture l40s__595.80", options=ONE_GPU),
    MatrixHost("l40s-r580-docker-one-gpu", "L40S, driver 580.126.09 (CUDA 13.0), docker, default --min-gpus 2", hosts.docker_with_toolkit, lambda: hosts.nvml_table("nvidia-smi_l40s_580.126.09_with-process.txt"), _gpus(1), 30, "cenzwong/gpu_and_inference_hw nvidia-smi.txt"),
    MatrixHost("wsl2-rtx3090x2-537", "WSL2, 2x RTX 3090, Windows driver 537.13 (CUDA 12.2)", hosts.wsl2, hosts.nvml_wsl2_two_3090, _gpus(2), 0, "docker/for-win#13658 (nvidia-smi in WSL2), microsoft/WSL#6772 (/proc/version)"),
    MatrixHost("wsl2-no-windows-driver", "WSL2 without the Windows driver's libraries", lambda r: hosts.wsl2(r, working=False), None, None, 12, "microsoft/WSL#6772 (/proc/version)"),
    MatrixHost("wsl1", "WSL1 (no GPU support)", hosts.wsl1, None, None, 12, "microsoft/WSL#4555 (/proc/version)"),
    MatrixHost("docker-without-gpus", "docker run without --gpus on a host with driver 565.57.01", hosts.docker_without_gpus, None, None, 11, "nixGL#186 (/proc/driver/nvidia/version), nvidia-docker#1410"),
    MatrixHost("container-after-daemon-reload", "container after `systemctl daemon-reload` on the host: NVML Unknown Error", hosts.docker_with_toolkit, _err(pynvml.NVML_ERROR_UNKNOWN), None, 11, "nvidia-docker#1671 (nvidia-smi's message)", smi=hosts.smi_error("nvidia-smi-error_nvml-unknown-error_container-after-daemon-reload.txt", 255)),
    MatrixHost("host-driver-library-mismatch", "bare host after a driver upgrade without reboot: driver/library version mismatch", hosts.bare_host_with_driver, _err(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH), None, 10, "gpustat#147 (nvidia-smi's message)", smi=hosts.smi_error("nvidia-smi-error_driver-library-version-mismatch.txt", 255)),
    MatrixHost("host-no-driver", "bare host without an NVIDIA driver", hosts.bare_host_no_driver, None, None, 10, "(an empty /dev and /proc)"),
    MatrixHost("h100x2-one-lost", "2x H100, GPU 1 lost (NVML: GPU is lost), TensorFlow sees one", hosts.docker_with_toolkit, hosts.nvml_one_gpu_lost, _gpus(1), 30, "nvidia_gpu_exporter capture h100-80gb-hbm3__590.48.01"),
    MatrixHost("h100x2-ecc-fail-on-health", "2x H100, uncorrectable ECC errors and a failed row remapping, --fail-on-health", hosts.docker_with_toolkit, hosts.nvml_ecc_errors, _gpus(2), 31, "H100 capture + counters from a public Slurm script (SOURCES.md)", options={"fail_on_health": "true"}),
    MatrixHost("hgx-h100x8-fabric-manager-stopped", "HGX H100 (8 GPUs, 4 NVSwitches), driver 535.161.08, nvidia-fabricmanager stopped: fabric In Progress", hosts.hgx_h100_fabric_manager_stopped, lambda: hosts.nvml_h100x8_fabric("In Progress"), _gpus(0), 14, "nebius kuberay README (nvidia-smi); enroot#15 (/dev listing); NVSentinel#883 (fabric state)"),
    MatrixHost("hgx-h100x8-one-gpu-off-the-bus", "HGX H100, 8 GPUs on the PCI bus, NVML lists 7 (0000:b7:00.0 fell off the bus), bare host", hosts.hgx_h100_host, hosts.nvml_h100x8_one_missing, _gpus(7), 31, "nebius kuberay README (nvidia-smi, Bus-Ids); enroot#15 (/dev listing); sysfs formats from linux drivers/pci/pci-sysfs.c"),
    MatrixHost("h100x2-busy-nvml-without-v3", "2x H100, other processes on GPU 0, NVML without the _v3 process query", hosts.docker_with_toolkit, hosts.nvml_busy_without_v3, _gpus(2), 0, "nvidia_gpu_exporter captures h100 + h100-mig query-compute-apps"),
]  # fmt: skip


def record(host: MatrixHost, workdir: Path) -> hosts.CheckRun:
    return hosts.run_check(host.tree(workdir / "root"), host.probes(), workdir, **host.options)


def write_all(only: list[str] | None = None) -> None:
    """Record every host, or only the ids named (earlier recordings are kept as they were written)."""
    MATRIX_DIR.mkdir(parents=True, exist_ok=True)
    for host in MATRIX:
        if only and host.id not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            run = record(host, Path(tmp))
        assert run.code == host.code, (host.id, run.code, run.report["verdict"])
        (MATRIX_DIR / f"{host.id}.json").write_text(json.dumps(run.report, indent=1) + "\n")
    print("| host | exit | built from |\n| --- | --- | --- |")
    for host in MATRIX:
        print(f"| {host.what} | {host.code} | {host.sources} |")


if __name__ == "__main__":
    sys.exit(write_all(sys.argv[1:]))
