"""Round 25, read from held20 and held21 after they were scored: a kernel fault on an overclocked GPU is the
GPU's (31); PaddlePaddle's GPU build finding no CUDA device names the driver layer, and a container told in
Chinese is a container. Real lines from threads outside every evaluation set."""

from __future__ import annotations

import pytest

from conftest import diagnosed_code
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# ethereum-mining/ethminer#146 (sent to #72, where the overclock was found to be the cause): six GPUs
# overclocked and undervolted, then the miner's search kernel faults
OVERCLOCK_146 = (
    "This came up after a couple hours of good, fast mining on ubuntu 16.04 with cuda installed via repo .deb"
    " per nvidia's site. I'm using 6 gtx 1060's with 6GB overclocked to 200/1200 and undervolted to 85W:"
)
ILLEGAL_ADDRESS_146 = "CUDA error in func 'search' at line 365 : an illegal memory access was encountered."
# ethereum-mining/ethminer#907: the overclock's own words as the reporter spelt them
OVERCLOCK_907 = "Memory Overclokced +930 Samsung"
# nicehash/nheqminer#340: the same fault on a GPU whose owner says it runs at stock settings
STOCK_340 = (
    "same here... no overclocking. just stock settings... What i currently do is to have a bash script"
    " (nicehash.sh):"
)
ILLEGAL_ADDRESS_340 = "CUDA error 'an illegal memory access was encountered' in func 'solve' line 2095"


def test_a_kernel_fault_on_an_overclocked_gpu_is_the_gpus() -> None:
    assert diagnosed_code(OVERCLOCK_146, ILLEGAL_ADDRESS_146) == ExitCode.GPU_UNHEALTHY
    assert diagnosed_code(OVERCLOCK_907, ILLEGAL_ADDRESS_146) == ExitCode.GPU_UNHEALTHY
    # without the overclock the same fault is the job's (a kernel's bug, an op, a library version)
    assert diagnosed_code(ILLEGAL_ADDRESS_146) == ExitCode.TRAINING_FAILED


def test_a_gpu_said_not_to_be_overclocked_shows_no_overclock() -> None:
    assert diagnosed_code(STOCK_340, ILLEGAL_ADDRESS_340) == ExitCode.TRAINING_FAILED


# PaddlePaddle/Paddle#33540: import paddle in a container started by plain `docker run` (the maintainers:
# Paddle counted no GPU through CUDA; runc maps no GPU into the container, nvidia-docker or --runtime=nvidia
# does). The Chinese lines keep their full-width punctuation, as posted.
PADDLE_NO_DEVICE_33540 = (
    "/usr/local/python3.5.1/lib/python3.5/site-packages/paddle/fluid/framework.py:298: UserWarning: You are"
    " using GPU version Paddle, but your CUDA device is not set properly. CPU device will be used by default."
)
IN_DOCKER_33540 = (
    "docker中安装：sudo docker run --name ppocr -v $PWD:/paddle --network=host -it"  # noqa: RUF001
    " paddlepaddle/paddle:latest-dev-cuda10.1-cudnn7-gcc82 /bin/bash"
)
INSIDE_THE_CONTAINER_33540 = (
    "`sudo docker run` ，如若docker已将默认运行时设置为了nvidia-docker"  # noqa: RUF001
    " 则没有问题，容器内应能正常使用gpu；"  # noqa: RUF001
)
# PaddlePaddle/Serving#1220: nvidia-smi missing after going into the project's image, found on the host
INTO_THE_IMAGE_1220 = (
    "提供的 registry.baidubce.com/paddlepaddle/serving:0.5.0-devel"
    " 这个镜像进去之后nvidia-smi ，bash: nvidia-smi: command not found，"  # noqa: RUF001
    "宿主机执行nvidia-smi是可以检测到的，另外试了其他的pytorch镜像也是没问题的"  # noqa: RUF001
)
DOCKER_IMAGE_TITLE_1220 = "docker 镜像内无法检测到GPU"


def test_paddles_gpu_build_finding_no_cuda_device_names_the_driver_layer() -> None:
    assert diagnosed_code(PADDLE_NO_DEVICE_33540) == ExitCode.NO_DRIVER
    assert diagnosed_code(IN_DOCKER_33540, PADDLE_NO_DEVICE_33540) == ExitCode.CONTAINER_NO_GPU


@pytest.mark.parametrize(
    "line",
    [INSIDE_THE_CONTAINER_33540, INTO_THE_IMAGE_1220, DOCKER_IMAGE_TITLE_1220],
    ids=["inside-the-container", "into-the-image", "docker-image"],
)
def test_a_container_told_in_chinese_is_a_container(line: str) -> None:
    assert "container" in diagnose(line).evidence
    assert diagnosed_code(line, PADDLE_NO_DEVICE_33540) == ExitCode.CONTAINER_NO_GPU
