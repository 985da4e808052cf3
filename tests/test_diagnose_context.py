"""Where a log came from, as diagnose reads it: a container started without a GPU request (gpu_request.py),
WSL named as a word of its own, and the collective failures told by NCCL's error trace and Horovod's stall
inspector. Every line here is a real line of the public thread named beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfdist_validate.diagnose import diagnose
from tfdist_validate.diagnose.command import render
from tfdist_validate.exitcodes import ExitCode

LOGS = Path(__file__).parent / "fixtures" / "logs"
# tensorflow/tensorflow#41785: the TensorFlow GPU image started without --gpus
DOCKER_RUN = (
    (LOGS / "docker-tf-latest-gpu-without-gpus_tf-41785.log").read_text(encoding="utf-8").splitlines()[0]
)
# tensorflow/tensorflow#37978: what the CUDA runtime says when it has no (or too old a) libcuda
INSUFFICIENT = "cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version"
# tensorflow/tensorflow#66750 and #60646: TensorFlow 2.14+ finding no CUDA, and skipping the GPUs
NO_CUDA = [
    "2024-06-28 00:03:52.493638: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your"
    " machine, GPU will not be used.",
    "Skipping registering GPU devices...",
]
# the GPU check of NVIDIA's container toolkit guide
# (docs.nvidia.com/datacenter/cloud-native/container-toolkit)
WITH_GPUS = "sudo docker run --rm --runtime=nvidia --gpus all ubuntu nvidia-smi"
NVIDIA_SMI = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the"
    " latest NVIDIA driver is installed and running."
)


def test_no_gpu_request_reads_the_runtimes_driver_message_as_no_gpu_access() -> None:
    result = diagnose([DOCKER_RUN, INSUFFICIENT])
    assert result.code == ExitCode.CONTAINER_NO_GPU
    finding = result.failures[0]
    assert finding.signature.id == "cuda-driver-insufficient"
    assert finding.context == "container-no-gpu"
    # the reading it replaced is named, for the case where the GPU came another way
    assert "DRIVER_TOO_OLD (13)" in finding.alternatives
    assert [line.number for line in result.evidence["container-no-gpu"]] == [1]


def test_no_gpu_request_reads_tensorflow_finding_no_gpu_as_no_gpu_access() -> None:
    assert diagnose(NO_CUDA).code == ExitCode.TF_NO_GPU
    assert diagnose([DOCKER_RUN, *NO_CUDA]).code == ExitCode.CONTAINER_NO_GPU


def test_a_gpu_request_anywhere_keeps_the_usual_reading() -> None:
    assert diagnose([WITH_GPUS, INSUFFICIENT]).code == ExitCode.DRIVER_TOO_OLD
    # the user's retry with --gpus after a start without: the retry is what failed
    result = diagnose([DOCKER_RUN, WITH_GPUS, INSUFFICIENT])
    assert result.code == ExitCode.DRIVER_TOO_OLD
    assert "container-no-gpu" not in result.evidence and "container-gpu" in result.evidence


@pytest.mark.parametrize(
    "start",
    [
        # devices passed by hand (nvidia-docker 1's era), privileged, flags in a variable, a continued line,
        # nvidia-docker itself, Singularity's --nv: any of them may reach the GPU
        "docker run --device /dev/nvidia0:/dev/nvidia0 --device /dev/nvidiactl:/dev/nvidiactl nvidia/cuda",
        "docker run --privileged -it tensorflow/tensorflow:latest-gpu bash",
        "docker run $GPU_OPTS -it tensorflow/tensorflow:latest-gpu bash",
        "docker run --rm -it \\",
        "nvidia-docker run -it tensorflow/tensorflow:latest-gpu bash",
        "singularity exec --nv tensorflow_latest-gpu.sif python train.py",
        # docker's hint under its own errors (docs.docker.com/reference/cli/docker/container/run)
        "See 'docker run --help'.",
        # the variable the nvidia runtime and podman's hook read (NVIDIA/nvidia-container-toolkit#182)
        "Running `podman run --rm -e NVIDIA_VISIBLE_DEVICES=all nvidia/cuda:10.0-base nvidia-smi` returns the"
        ' error `Error: container_linux.go:349: starting container process caused "exec: \\"nvidia-smi\\":'
        ' executable file not found in $PATH": OCI runtime command not found error` Also, tried running from'
        " `nvidia/cuda:latest`",
    ],
)
def test_starts_that_may_reach_the_gpu_are_not_read_as_without_one(start: str) -> None:
    assert "container-no-gpu" not in diagnose([start, INSUFFICIENT]).evidence


def test_singularity_without_nv_is_a_start_without_gpu() -> None:
    # apptainer.org/docs/user/main/gpu.html: the GPU and driver libraries come in only with --nv / --nvccli
    result = diagnose(["singularity exec tensorflow_latest-gpu.sif python train.py", *NO_CUDA])
    assert result.code == ExitCode.CONTAINER_NO_GPU


def test_a_missing_host_module_is_not_re_read_by_the_container_start() -> None:
    # nvidia-docker#365's host: the kernel module is missing, whatever the container was given
    result = diagnose([DOCKER_RUN, "modprobe: FATAL: Module nvidia not found.", NVIDIA_SMI])
    assert result.code == ExitCode.NO_DRIVER


def test_wsl_as_a_word_of_its_own_is_wsl2_evidence() -> None:
    # microsoft/WSL#1788 (a maintainer's answer); /etc/wsl.conf (learn.microsoft.com/windows/wsl/wsl-config)
    line = (
        "Hi @saminoftheworld -- unfortunately, CUDA currently cannot be made to work with WSL."
        "  A future release might someday support it, but not currently."
    )
    assert diagnose([line, NVIDIA_SMI]).code == ExitCode.WSL2_PASSTHROUGH
    assert "wsl2" in diagnose(["[boot]", "# /etc/wsl.conf"]).evidence
    for other in ("continuing assuming a non-WSL environment", "newslot = slots.pop()"):
        assert "wsl2" not in diagnose([other]).evidence


def test_nccl_error_trace_is_a_collective_failure_but_its_channel_lines_are_not() -> None:
    # NVIDIA/nccl#1612: the trace NCCLCHECK leaves on its way up;
    # Oneflow-Inc/oneflow#3586: the healthy channel and tree setup
    assert diagnose(["[0] NCCL INFO misc/socket.cc:80 -> 6"]).code == ExitCode.COLLECTIVE_FAILED
    healthy = [
        "worker:101542:101934 [0] NCCL INFO Channel 00 : 0[18000] -> 1[18000] [receive] via NET/Socket/1",
        "worker:101542:101934 [0] NCCL INFO Trees [0] -1/-1/-1->1->0|0->1->-1/-1/-1"
        " [1] 0/-1/-1->1->-1|-1->1->0/-1/-1",
    ]
    assert diagnose(healthy).code == ExitCode.OK


def test_a_stall_after_a_ranks_out_of_memory_passes_the_out_of_memory_on() -> None:
    oom = (
        "2017-08-12 08:25:16.508376: E tensorflow/stream_executor/cuda/cuda_driver.cc:924] failed to allocate"
        " 1.51G (1617277696 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"
    )
    stall = "[1,0]<stderr>:Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]"  # horovod#1012
    assert diagnose([stall]).code == ExitCode.COLLECTIVE_FAILED
    result = diagnose([oom, stall])
    assert result.code == ExitCode.TRAINING_FAILED
    assert next(f for f in result.failures if f.signature.id == "horovod-stalled-ranks").echo_of is not None


@pytest.mark.parametrize(
    "line",
    [
        # minimaxir/gpt-2-cloud-run#17
        "When running the docker image, I receive the following cuda error. I have built the image using the"
        " normal tensorflow==1.15, but as far as I know cuda is only required for tensorflow on GPU?",
        # gaborvecsei/Barlow-Twins' Dockerfile; docker build's lines (gists of saprakashh, hairyhenderson,
        # hakaneroztekin)
        "FROM tensorflow/tensorflow:2.4.2-gpu",
        "Step 1/6 : FROM ubuntu:18.04",
        "Sending build context to Docker daemon 968.2 kB",
        "=> [1/3] FROM docker.io/library/ubuntu",
        # Project-HAMi/HAMi#1341: the container named by its kind
        "When I run nvidia-smi inside the GPU container, I cannot see the Python processes running on the"
        " GPU.",
        # a pod manifest (kubernetes.io/docs/concepts/workloads/pods), an event (toolkit#1239)
        "kind: Pod",
        "Warning  Failed     10s (x2 over 10s)  kubelet            Error: failed to create containerd task",
        # tensorflow/tensorflow#50735: "docker image" in other words than run / use / from
        "Is there a tensorflow docker image where I can specify the CUDA/CUDNN version specifically?",
        # aws/sagemaker-tensorflow-training-toolkit#182: an image in Amazon ECR
        "I downloaded this one: `520713654638.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tensorflow-scriptmode"
        ":1.12.0-gpu-py3`.",
    ],
)
def test_container_evidence_from_prose_builds_and_manifests(line: str) -> None:
    assert "container" in diagnose([line]).evidence


def test_libcuda_missing_from_a_docker_image_is_a_container_without_the_driver() -> None:
    """keras-team/autokeras#1609: a GPU was provisioned, the job's docker image found no libcuda.so.1: the
    container did not get the host's driver (11), not a host without one (10)."""
    log = [
        "Incompatible / missing CUDA drivers for docker image used in Tensor Flow Cloud",
        "\"'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such file or"
        ' directory"',
    ]
    assert diagnose(log).code == ExitCode.CONTAINER_NO_GPU
    assert diagnose(log[1:]).code == ExitCode.NO_DRIVER


@pytest.mark.parametrize(
    "line",
    [
        "from tensorflow.python.client import device_lib",
        '  File "/usr/lib/python3/dist-packages/keras/engine/training.py", line 1742, in fit',
        "From 10:00 the job was queued",
    ],
)
def test_python_imports_and_prose_are_no_dockerfile(line: str) -> None:
    assert "container" not in diagnose([line]).evidence


def test_wslg_is_wsl2_evidence() -> None:
    # WSLg's mount, as learn.microsoft.com/windows/wsl/tutorials/gui-apps describes it
    assert "wsl2" in diagnose(["ls /mnt/wslg"]).evidence


def test_linux_lines_on_a_windows_machine_show_wsl2() -> None:
    # a bash prompt (elvinpoon/tensorflow-CWS-LSTM#3) in a log whose other line is cmd's banner (WSL#7336)
    prompt = (
        "rzai@rzai00:~/prj/tensorflow-CWS-LSTM$ CUDA_VISIBLE_DEVICES=1 python model_lstm_build.py"
        " --train=data/trainSeg.txt --model=model --iters=50"
    )
    banner = "Microsoft Windows [Version 10.0.22000.160]"
    assert diagnose([prompt, NVIDIA_SMI]).code == ExitCode.NO_DRIVER  # Linux alone: a host
    result = diagnose([banner, prompt, NVIDIA_SMI])
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert [line.number for line in result.evidence["wsl2"]] == [2, 1]
    # Git Bash on Windows shows no colon after the host name: native Windows, not Linux
    assert "wsl2" not in diagnose([banner, "me@HOST MINGW64 ~/project (main)", NVIDIA_SMI]).evidence


def test_a_failed_nvidia_module_build_is_no_driver_on_a_host_and_wsl2s_own_under_wsl() -> None:
    # NVIDIA/open-gpu-kernel-modules#635; under WSL2 (WSL#6772's kernel string) no Linux driver may be built
    line = "Consult /var/lib/dkms/nvidia/545.29.02/build/make.log for more information."
    assert diagnose([line]).code == ExitCode.NO_DRIVER
    kernel = (
        "Linux version 5.4.91-microsoft-standard-WSL2 (oe-user@oe-host) (x86_64-msft-linux-gcc (GCC) 9.3.0,"
        " GNU ld (GNU Binutils) 2.34.0.20200220) #1 SMP Mon Jan 25 18:39:31 UTC 2021"
    )
    assert diagnose([kernel, line]).code == ExitCode.WSL2_PASSTHROUGH
    # another module's build log is no NVIDIA failure (xanmod/linux#46)
    assert diagnose(["Consult /var/lib/dkms/bbswitch/0.8/build/make.log for more information."]).code == 0


def test_a_prompt_with_a_windows_style_capital_host_name_is_wsl2_evidence() -> None:
    # microsoft/WSL#8174: the prompt of the WSL shell of a machine named RIPPER, before its commands
    assert "wsl2" in diagnose(["tux@RIPPER:~$"]).evidence
    # microsoft/DirectML#18: TensorFlow names the host (MAKERPC) of a WSL shell
    line = (
        "2020-06-17 16:36:05.470029: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver"
        " does not appear to be running on this host (MAKERPC): /proc/driver/nvidia/version does not exist"
    )
    assert diagnose([line]).code == ExitCode.WSL2_PASSTHROUGH
    # Linux hosts: Ubuntu's suggested "user-ProductName" (nvidia-docker#858's System-Product-Name), cluster
    # nodes, a container id
    for prompt in (
        "john@john-System-Product-Name:~$ nvidia-smi",
        "a@node01:~$ ls",
        "root@e09b51ed3473:/# ls",
    ):
        assert "wsl2" not in diagnose([prompt]).evidence


CUINIT_NO_DEVICE = (
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:466] failed call to cuInit: CUDA_ERROR_NO_DEVICE"
)


@pytest.mark.parametrize(
    "header",
    [
        # microsoft/WSL#11589 (WSL 2.1.5): a two-part nvidia-smi version beside the Windows driver's
        "| NVIDIA-SMI 545.46                 Driver Version: 546.80       CUDA Version: ERR!     |",
        # a WSLg machine's nvidia-smi (its process list holds /Xwayland), in a CUDA benchmark's notes
        "| NVIDIA-SMI 530.47                 Driver Version: 531.68       CUDA Version: 12.1     |",
    ],
)
def test_an_nvidia_smi_versioned_apart_from_its_driver_is_wsl2_evidence(header: str) -> None:
    result = diagnose([header, CUINIT_NO_DEVICE])
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert [line.number for line in result.evidence["wsl2"]] == [1]


@pytest.mark.parametrize(
    "header",
    [
        # Windows hosts' nvidia-smi.exe (tensorflow/tensorflow#22472, microsoft/WSL#9134): one driver package,
        # one number, as on a Linux host
        "| NVIDIA-SMI 398.82                 Driver Version: 398.82                    |",
        "| NVIDIA-SMI 517.48       Driver Version: 517.48       CUDA Version: 11.7     |",
    ],
)
def test_an_nvidia_smi_with_its_drivers_own_version_is_no_wsl2_evidence(header: str) -> None:
    result = diagnose([header, CUINIT_NO_DEVICE])
    assert "wsl2" not in result.evidence
    assert result.code == ExitCode.NO_DRIVER


# labdao/plex#18: the container toolkit's own NVML check, on the host, before the container starts
TOOLKIT_MISMATCH = (
    "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown."
)


def test_an_nvml_mismatch_inside_a_container_is_the_images_own_driver_but_the_toolkits_is_the_hosts() -> None:
    # tensorflow/build#59: nvidia-smi in a started container reports the mismatch: the image's libraries
    start = (
        '$ docker run --gpus=all --rm -it tensorflow/build:latest-python3.9 bash -c "ldconfig && nvidia-smi"'
    )
    inside = diagnose([start, "Failed to initialize NVML: Driver/library version mismatch"])
    assert inside.code == ExitCode.CONTAINER_NO_GPU
    assert inside.failures[0].context == "container"
    # the toolkit refused to start it: the host's driver, with or without the start line beside it
    assert diagnose([start, TOOLKIT_MISMATCH]).code == ExitCode.NO_DRIVER
    assert diagnose([TOOLKIT_MISMATCH]).code == ExitCode.NO_DRIVER
    # with no context the plain line is the host's (and the container reading is named)
    bare = diagnose(["Failed to initialize NVML: Driver/library version mismatch"])
    assert bare.code == ExitCode.NO_DRIVER
    assert "(11)" in bare.failures[0].alternatives


def test_nvidia_docker_1s_driver_0_0_is_no_driver_version_at_all_not_an_old_one() -> None:
    # NVIDIA/nvidia-docker#190: the driver's CUDA version could not be read (0.0); #207: a real, older one
    unread = diagnose(
        ["nvidia-docker | 2016/09/04 14:43:17 Error: unsupported CUDA version: driver 0.0 < image 8.0"]
    )
    # no recognised cause: only the resemblance model's lead (it cannot weigh "0.0"), marked as inferred
    assert all(f.inferred for f in unread.failures)
    old = "nvidia-docker | 2016/09/23 23:21:01 Error: unsupported CUDA version: driver 7.0 < image 8.0"
    assert diagnose([old]).code == ExitCode.DRIVER_TOO_OLD


# mudler/LocalAI#11973: Docker Desktop (WSL2) with compose `capabilities: [gpu, utility]`: nvidia-smi works,
# and CUDA finds no libcuda
LOCALAI_HOST = (
    "Docker Desktop 29.7.2 (Compose 5.5.1) on Windows 11, WSL2 kernel `6.18.33.2-microsoft-standard-WSL2`,"
    " x86_64. NVIDIA RTX 5070 Ti, driver 616.92."
)
LOCALAI_NO_LIBCUDA = (
    "`nvidia-smi` works inside the container, so the setup looks fine, but every CUDA backend fails to start"
    " with `ImportError: libcuda.so.1: cannot open shared object file`."
)


@pytest.mark.parametrize(
    "request_line",
    [
        "#           capabilities: [gpu, utility]",
        # containerd/nerdctl#1023
        "nerdctl run -it --rm --gpus capabilities=utility,device=GPU-3a23c669-1f69-c64e-cf85-44e9b07e7a2a"
        " nvidia/cuda:9.0-base nvidia-smi",
        "docker run --rm --gpus all -e NVIDIA_DRIVER_CAPABILITIES=utility nvidia/cuda:11.0-base nvidia-smi",
    ],
)
def test_a_gpu_request_without_the_compute_capability_is_a_container_without_cuda(request_line: str) -> None:
    result = diagnose([LOCALAI_HOST, request_line, LOCALAI_NO_LIBCUDA])
    assert result.code == ExitCode.CONTAINER_NO_GPU
    assert result.failures[0].context == "container-no-compute"
    assert "compute" in result.failures[0].alternatives
    # without the request line the same log reads as WSL2's passthrough
    assert diagnose([LOCALAI_HOST, LOCALAI_NO_LIBCUDA]).code == ExitCode.WSL2_PASSTHROUGH
    # the human report names that context in words (it raised KeyError when the context was new)
    shown = render(result, "<test>")
    assert "read as a container whose GPU request leaves out the driver's compute capability" in shown


@pytest.mark.parametrize(
    "request_line",
    [
        "docker run -e NVIDIA_DRIVER_CAPABILITIES=compute,utility nvidia/cuda /bin/bash",
        # containerd/nerdctl#1023's fix
        "sudo nerdctl run --rm --gpus '\"capabilities=compute,utility\"' --debug nvidia/cuda:11.0-base"
        " nvidia-smi",
        "          capabilities: [gpu]",
        "NVIDIA_DRIVER_CAPABILITIES=all",
    ],
)
def test_capabilities_with_compute_or_all_ask_for_cuda(request_line: str) -> None:
    assert "container-no-compute" not in diagnose([request_line]).evidence
