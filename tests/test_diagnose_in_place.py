"""Another tool's own "no GPU" answer (PyTorch's is_available, ollama's installer) read only where the log
shows the place: in a container or under WSL2 it is that place which withholds the GPU; on a bare host the
same answer also fits a CPU-only build of that tool, so nothing is claimed there. Every line is a real line of
the thread named beside it."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# floydhub/dockerfiles#3: a PyTorch GPU image started with plain `docker run`
DOCKER_RUN = "$ sudo docker run  -t -i floydhub/pytorch:latest-gpu-py3 ipython"
TORCH_FALSE = ["In [2]: torch.cuda.is_available()", "Out[2]: False"]
# ollama/ollama#1460: ollama's installer under WSL2
UNDER_WSL = "I am running it under WSL2. It is telling me that it cant fing the GPU."
OLLAMA = "WARNING: No NVIDIA GPU detected. Ollama will run in CPU-only mode."


def test_pytorch_seeing_no_gpu_in_a_container_started_without_gpus_is_no_gpu_access() -> None:
    result = diagnose([DOCKER_RUN, *TORCH_FALSE])
    assert result.code == ExitCode.CONTAINER_NO_GPU
    assert result.failures[0].signature.id == "torch-sees-no-gpu-in-place"
    assert result.failures[0].context == "container-no-gpu"  # the report names the start that asked for none


def test_the_same_answer_under_wsl2_is_the_passthrough() -> None:
    result = diagnose([UNDER_WSL, *TORCH_FALSE])
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert result.failures[0].context == "wsl2"


def test_on_a_bare_host_the_answer_claims_nothing() -> None:
    """A CPU-only PyTorch answers the same on any host: without the place, no code is guessed."""
    assert diagnose(TORCH_FALSE).code == ExitCode.OK
    assert diagnose([OLLAMA]).code == ExitCode.OK


def test_ollamas_installer_under_wsl2_is_the_passthrough() -> None:
    result = diagnose([UNDER_WSL, OLLAMA])
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert result.failures[0].signature.id == "tool-sees-no-gpu-in-place"


def test_a_true_answer_is_no_failure() -> None:
    """The call with its answer on the same line, or True on the next, starts no wait for a False."""
    assert diagnose([DOCKER_RUN, "In [2]: torch.cuda.is_available()", "Out[2]: True"]).code == ExitCode.OK


# NVIDIA/nvidia-container-toolkit#218: `RUN nvidia-smi` in a Dockerfile, as BuildKit reports it
BUILD = "docker build -t nvidiadockertest -f Dockerfile ."
RUN_STEP_FAILED = (
    'ERROR: failed to solve: process "/bin/sh -c nvidia-smi" did not complete successfully: exit code: 127'
)
# NVIDIA/nvidia-docker#225: the same step under the legacy builder
NOT_FOUND = "/bin/sh: 1: nvidia-smi: not found"
# the toolkit's own GPU check (docs.nvidia.com/datacenter/cloud-native/container-toolkit)
RUN_WITH_GPUS = (
    "sudo docker run --rm --runtime=nvidia --gpus all nvidia/cuda:11.6.2-base-ubuntu20.04 nvidia-smi"
)


def test_a_gpu_check_inside_an_image_build_is_no_gpu_access_and_says_why() -> None:
    result = diagnose([BUILD, RUN_STEP_FAILED])
    assert result.code == ExitCode.CONTAINER_NO_GPU
    finding = result.failures[0]
    assert finding.signature.id == "nvidia-smi-not-found"
    assert finding.context == "container-build"
    assert "image was built" in finding.alternatives  # shown beside the finding


def test_without_the_build_the_shells_not_found_is_a_host_without_driver() -> None:
    assert diagnose([NOT_FOUND]).code == ExitCode.NO_DRIVER
    assert diagnose(["nvidia-docker build -t gpu .", NOT_FOUND]).code == ExitCode.CONTAINER_NO_GPU


def test_a_run_with_a_gpu_request_in_the_same_log_cancels_the_builds_reading() -> None:
    result = diagnose([BUILD, RUN_WITH_GPUS, NOT_FOUND])
    assert "container-build" not in result.evidence
    assert "image was built" not in result.failures[0].alternatives


# rapidsai/dask-cuda#816: CUDA's 801 under WSL2 (WSL's nvidia-smi header: Linux and Windows versions differ)
WSL_SMI = "| NVIDIA-SMI 510.00       Driver Version: 510.06       CUDA Version: 11.6     |"
NOT_SUPPORTED = "CUDARuntimeError: cudaErrorNotSupported: operation not supported"


def test_an_operation_cuda_does_not_support_under_wsl2_is_the_passthrough() -> None:
    result = diagnose([WSL_SMI, NOT_SUPPORTED])
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert result.failures[0].signature.id == "wsl-cuda-operation-not-supported"


def test_the_same_error_on_a_host_claims_nothing() -> None:
    """On a host 801 has other causes (MIG, vGPU without unified memory): the line alone decides nothing."""
    assert diagnose([NOT_SUPPORTED]).code == ExitCode.OK


# fauxpilot/fauxpilot#104: the NGC (Triton) entrypoint's words, as the user quoted them;
# HuangJunJie2017/BEVDet#314: the banner's warning for a GPU the release does not support
NO_SUPPORTED_GPU = (
    "the triton container exits after a few seconds with the error `No supported GPU(s) detected to run this"
    " container`."
)
NOT_YET_SUPPORTED = (
    "WARNING: Detected NVIDIA NVIDIA GeForce RTX 4090 GPU, which is not yet supported in this version of the"
    " container"
)


def test_an_ngc_image_finding_no_supported_gpu_is_a_container_without_gpu() -> None:
    result = diagnose([NO_SUPPORTED_GPU])
    assert result.code == ExitCode.CONTAINER_NO_GPU
    assert result.failures[0].signature.id == "ngc-no-supported-gpu"


def test_with_a_gpu_the_release_does_not_support_the_banner_means_that_gpu() -> None:
    result = diagnose([NOT_YET_SUPPORTED, NO_SUPPORTED_GPU])
    assert result.code == ExitCode.UNSUPPORTED_GPU
    assert "ngc-no-supported-gpu" not in {f.signature.id for f in result.findings}


# bitsandbytes-foundation/bitsandbytes#486: bitsandbytes' words on native Windows (it had no GPU build there)
BNB_NO_GPU = (
    r"C:\Users\Administrator\AppData\Local\Programs\Python\Python310\lib\site-packages\bitsandbytes\cuda_setup"
    r"\main.py:136: UserWarning: WARNING: No GPU detected! Check your CUDA paths. Proceeding to load CPU-only"
    " library..."
)


def test_a_tools_no_gpu_words_on_native_windows_claim_nothing() -> None:
    """The place is neither a container nor WSL2: the tool's answer is its own business."""
    assert diagnose([BNB_NO_GPU]).code == ExitCode.OK
    assert diagnose([UNDER_WSL, BNB_NO_GPU]).code == ExitCode.WSL2_PASSTHROUGH


# IEIT-Yuan/Yuan-2.0#65: PyTorch's own reason for the same answer, a driver older than its CUDA
TORCH_DRIVER_OLD = (
    "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:124: UserWarning: CUDA initialization:"
    " The NVIDIA driver on your system is too old (found version 11000). Please update your GPU driver by"
    " downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx"
    " Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with"
    " your version of the CUDA driver. (Triggered internally at"
    " /opt/pytorch/pytorch/c10/cuda/CUDAFunctions.cpp:108.)"
)


def test_a_reason_printed_beside_the_answer_is_the_cause() -> None:
    """In a container that did get the GPU, PyTorch's False after its 'driver too old' is that driver (13),
    not a container without GPU access (11, which would rank first)."""
    result = diagnose([RUN_WITH_GPUS, TORCH_DRIVER_OLD, *TORCH_FALSE])
    assert result.code == ExitCode.DRIVER_TOO_OLD
    assert "torch-sees-no-gpu-in-place" not in {f.signature.id for f in result.findings}
