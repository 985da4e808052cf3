"""Round 33, read from held29 after it was scored. Real lines from threads outside every evaluation set, and
from the projects' own files."""

from __future__ import annotations

from conftest import diagnosed_code, excerpt_log, failure_ids
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# ethereum-mining/ethminer#146's kernel fault (test_diagnose_r25.py): the job's, unless the GPU is overclocked
ILLEGAL_ADDRESS_146 = "CUDA error in func 'search' at line 365 : an illegal memory access was encountered."
# fireice-uk/xmr-stak's issue template (.github/ISSUE_TEMPLATE.md at
# 69778f7bb94676eb236c1161e36d3d85477d2de2): every report made from it carries the two questions, whatever the
# reporter answers below them
TEMPLATE_OVERCLOCK = "  - Is the CPU or GPU overclocked?"
TEMPLATE_UNDERVOLT = "  - Is the Main memory of the CPU or GPU undervolted?"


def test_an_issue_templates_overclock_question_is_no_overclock() -> None:
    questions = (TEMPLATE_OVERCLOCK, TEMPLATE_UNDERVOLT)
    assert diagnosed_code(*questions, ILLEGAL_ADDRESS_146) == ExitCode.TRAINING_FAILED
    # the reporter's own words still count (ethminer#146's "overclocked to 200/1200 and undervolted to 85W")
    overclocked = "I'm using 6 gtx 1060's with 6GB overclocked to 200/1200 and undervolted to 85W:"
    assert diagnosed_code(TEMPLATE_OVERCLOCK, overclocked, ILLEGAL_ADDRESS_146) == ExitCode.GPU_UNHEALTHY


# NVIDIA/gpu-monitoring-tools#2 (the maintainer: set the nvidia runtime as the node's default): Kubernetes
# named as the place in the reporter's words, nvidia-smi missing in the pod
ON_KUBERNETES_2 = (
    "After deploy on kubernetes following [instructions](https://github.com/NVIDIA/gpu-monitoring-tools/blob/"
    "master/exporters/prometheus-dcgm/README.md#deploy-on-kubernetes-cluster)."
)
SMI_MISSING_2 = '"/usr/local/bin/dcgm-exporter: line 55: nvidia-smi: command not found" in DCGM exporter'
# NVIDIA/k8s-device-plugin#52 and #105: the same place in other words
ON_K8S_52 = "on k8s CPU node, set nvidia as the default runtime,"
DEPLOYED_105 = (
    "I deployed the latest Kubernetes (1.13) through juju cs:bundle/canonical-kubernetes-435.  The cluster"
    " ran well."
)


def test_kubernetes_named_as_the_place_is_a_container() -> None:
    assert diagnosed_code(SMI_MISSING_2) == ExitCode.NO_DRIVER
    assert diagnosed_code(ON_KUBERNETES_2, SMI_MISSING_2) == ExitCode.CONTAINER_NO_GPU
    for sentence in (ON_K8S_52, DEPLOYED_105):
        assert "container" in diagnose([sentence]).to_json()["context"]
    assert diagnose(["I read the Kubernetes docs"]).to_json()["context"] == {}


# zabbly/incus#81 (a regression of the Incus 6.11 packages' nvidia hook, fixed by their update): the
# instance's config, its start and LXC's log
INCUS_CONFIG_81 = ("config:", "  nvidia.driver.capabilities: all", '  nvidia.runtime: "true"')
INCUS_START_81 = (
    "incus start ai",
    "Error: Failed to run: /opt/incus/bin/incusd forkstart ai /var/lib/incus/containers"
    " /run/incus/ai/lxc.conf: exit status 1",
    "lxc ai 20250405020851.656 ERROR    utils - ../src/lxc/utils.c:run_buffer:571 - Script exited with"
    " status 1",
    "lxc ai 20250405020851.656 ERROR    conf - ../src/lxc/conf.c:lxc_setup:3948 - Failed to run mount hooks",
)
# NixOS/nixpkgs#161431: LXD 4.20's client asking for the runtime on the command line, LXC 4's log format
LXD_LAUNCH_161431 = (
    "$ lxc launch ubuntu:20.04 mycontainer -c nvidia.runtime=true",
    "lxc mycontainer 20220222224534.939 ERROR    conf - conf.c:lxc_setup:4381 - Failed to run mount hooks",
)


def test_an_lxd_instance_whose_nvidia_hook_failed_has_no_gpu() -> None:
    assert diagnosed_code(*INCUS_CONFIG_81, *INCUS_START_81) == ExitCode.CONTAINER_NO_GPU
    assert failure_ids(*LXD_LAUNCH_161431) == {"lxc-nvidia-hook-failed"}
    # without nvidia.runtime in the log the mount hook that failed may be any other
    assert failure_ids(*INCUS_START_81) == set()


# OpenCL's loader finding no platform: hashcat/hashcat#1207 (the maintainer: "OpenCL installation error";
# the GT 740's /dev/nvidia-uvm failed to open), 10gic/vanitygen-plusplus#100 (a Tesla T4 host)
NO_PLATFORM_1207 = "clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR"
NO_PLATFORM_100 = "clGetPlatformIDs(0): Unknown code -1001"
# open-mpi/hwloc#425: hwloc's own probe, printed by MPI launchers on machines without an OpenCL ICD
HWLOC_PROBE_425 = "OpenCL: Failed to get number of platforms with clGetPlatformIDs(): -1001"


def test_opencl_finding_no_platform_is_a_driver_without_its_opencl_part() -> None:
    for line in (NO_PLATFORM_1207, NO_PLATFORM_100):
        assert failure_ids(line) == {"opencl-no-platform"}
        assert diagnosed_code(line) == ExitCode.NO_DRIVER
    assert (
        diagnosed_code("docker run --rm -it hashcat/hashcat", NO_PLATFORM_1207) == ExitCode.CONTAINER_NO_GPU
    )
    assert failure_ids(HWLOC_PROBE_425) == set()


def test_opencl_finding_no_platform_under_wsl2_is_the_passthrough() -> None:
    """held18's Vina-GPU log under WSL2 (read since round 23 as a GPU API WSL2 does not pass through) now
    names the failure itself; its reading stays WSL2's (12)."""
    result = diagnose(
        excerpt_log("wsl2-vina-gpu-opencl-err-1001-cl-platform-not-found-khr-nvidia-opencl-unsupported-65")
    )
    assert (result.code, result.failures[0].signature.id) == (ExitCode.WSL2_PASSTHROUGH, "opencl-no-platform")
