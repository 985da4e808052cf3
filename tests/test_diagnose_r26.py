"""Round 26, read from held21 and held22 after they were scored: the CUDA runtime's "driver version is
insufficient" (error 35) on a machine whose owner says it has no NVIDIA GPU is no driver at all (10), not a
driver to upgrade (13). Real lines from threads outside every evaluation set."""

from __future__ import annotations

import pytest

from conftest import diagnosed_code
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# jcjohnson/neural-style#355: the owner's words, then what the Torch7 runtime printed
NO_VIDEO_CARD_355 = (
    "I don't have a CUDA compatible video card. However, that shouldn't matter as I input `-gpu -1` in"
    " order to run on only CPU and not require CUDA or GPU."
)
INSUFFICIENT_355 = (
    "THCudaCheck FAIL file=/tmp/luarocks_cutorch-scm-1-8295/cutorch/lib/THC/THCGeneral.c line=62 error=35 :"
    " CUDA driver version is insufficient for CUDA runtime version"
)
# C0untFloyd/roop-unleashed#586: an Intel HD graphics desktop, ONNX Runtime's CUDA provider
NO_NVIDIA_CARD_586 = (
    "I do not have an nvidia card (I have an Intel(R) HD graphics 530) so I am trying to run roop with CPU"
    " but I keep seeing this error:"
)
INSUFFICIENT_586 = (
    r"D:\a\_work\1\s\onnxruntime\core\providers\cuda\cuda_call.cc:121 onnxruntime::CudaCall"
    r" D:\a\_work\1\s\onnxruntime\core\providers\cuda\cuda_call.cc:114 onnxruntime::CudaCall CUDA failure 35:"
    " CUDA driver version is insufficient for CUDA runtime version ; GPU=-1231511160 ;"
    " hostname=DESKTOP-F5CC2RU"
)
# jcjohnson/neural-style#14: an Intel Iris MacBook (the maintainer: CUDA works on NVIDIA GPUs only)
DID_NOT_GOT_14 = (
    "but I did not got a NVIDIA GPU, the GPU is Intel Iris Graphics 6100 1536 MB , I install thie CUDA"
    " toolkit and driver , there is another error  ' CUDA driver version is insufficient for CUDA runtime"
    " version.', any idea?"
)
# higgsfield/Imagination-Augmented-Agents#8
MACHINE_WITHOUT_8 = (
    "I have been running through the tutorial on a machine without GPU and CUDA. The following error occurs"
    " on 2.actor-critic.ipynb:"
)
RUNTIME_ERROR_8 = (
    "cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version at"
    " /pytorch/aten/src/THC/THCGeneral.cpp:74"
)
# kenshohara/video-classification-3d-cnn-pytorch#36
LACKING_36 = (
    "I have been trying to test your code (with a small video file) on my laptop (lacking the CUDA GPU),"
    " but it gives the following error:"
)
# hezhangsprinter/DCPDN#11
WITHOUT_CUDA_AND_GPU_11 = (
    'when  I run "python demo.py --dataroot ./facades/nat_new4 --valDataroot ./facades/nat_new4 --netG'
    ' ./demo_model/netG_epoch_8.pth" without cuda and GPU,I get that:'
)
# mingyuliutw/UNIT#76
WITHOUT_HAVING_76 = (
    "I'm trying to recreate this project, but I am getting an error that says CUDA is not sufficent enough."
    " Is there a way to run this code without having an Nvidia card."
)
# CMU-Perceptual-Computing-Lab/openpose_unity_plugin#56: OpenPose's check of the same runtime call
NOT_NVIDIA_56 = "I have the same problem. But my GPU is not NVIDIA, it's AMD."
CHECK_FAILED_56 = "Cuda check failed (35 vs. 0): CUDA driver version is insufficient for CUDA runtime version"
# NVlabs/MUNIT#82
INTEGRATED_82 = (
    "I would also like to run it on my laptop, but I only have an integrated (Intel HD) graphic card. Is it"
    " possible/does it make sense to run it without CUDA?"
)

NO_NVIDIA_GPU = [
    NO_VIDEO_CARD_355,
    NO_NVIDIA_CARD_586,
    DID_NOT_GOT_14,
    MACHINE_WITHOUT_8,
    LACKING_36,
    WITHOUT_CUDA_AND_GPU_11,
    WITHOUT_HAVING_76,
    NOT_NVIDIA_56,
    INTEGRATED_82,
]
IDS = ["no-video-card", "no-nvidia-card", "did-not-got", "machine-without", "lacking", "without-cuda-and-gpu",
       "without-having", "not-nvidia", "integrated"]  # fmt: skip


@pytest.mark.parametrize("words", NO_NVIDIA_GPU, ids=IDS)
def test_the_owners_words_say_there_is_no_nvidia_gpu(words: str) -> None:
    assert "no-nvidia-gpu" in diagnose(words).evidence


@pytest.mark.parametrize(
    ("words", "failure"),
    [
        (NO_VIDEO_CARD_355, INSUFFICIENT_355),
        (NO_NVIDIA_CARD_586, INSUFFICIENT_586),
        (MACHINE_WITHOUT_8, RUNTIME_ERROR_8),
        (NOT_NVIDIA_56, CHECK_FAILED_56),
    ],
    ids=["torch7", "onnxruntime", "pytorch", "openpose"],
)
def test_an_insufficient_driver_without_an_nvidia_gpu_is_no_driver(words: str, failure: str) -> None:
    assert diagnosed_code(words, failure) == ExitCode.NO_DRIVER
    # the same line alone is the driver older than the runtime
    assert diagnosed_code(failure) == ExitCode.DRIVER_TOO_OLD


def test_the_owners_words_in_the_same_line_as_the_error_count_too() -> None:
    assert diagnosed_code(DID_NOT_GOT_14) == ExitCode.NO_DRIVER


@pytest.mark.parametrize(
    "printed",
    [
        # TensorFlow's own stub (stream_executor/cuda/cudart_stub.cc, as the line says), printed on every
        # machine whose CUDA runtime is missing
        "2020-01-28 14:25:44.123456: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart"
        " dlerror if you do not have a GPU set up on your machine.",
        # JAX's fallback warning (jax._src.xla_bridge), printed wherever jaxlib finds no GPU backend
        "WARNING:absl:No GPU/TPU found, falling back to CPU."
        " (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
    ],
    ids=["tensorflow-stub", "jax-fallback"],
)
def test_programs_printing_about_a_missing_gpu_are_not_the_owners_words(printed: str) -> None:
    assert "no-nvidia-gpu" not in diagnose(printed).evidence
    assert diagnosed_code(printed, INSUFFICIENT_355) == ExitCode.DRIVER_TOO_OLD


def test_an_owner_with_an_nvidia_gpu_keeps_the_old_driver_reading() -> None:
    # BVLC/caffe#736, a reporter on a GTX 1060: an NVIDIA GPU named is no evidence of its absence
    with_nvidia = "same mistake, use cuda 8.0 with GTX 1060"
    assert diagnosed_code(with_nvidia, INSUFFICIENT_355) == ExitCode.DRIVER_TOO_OLD
