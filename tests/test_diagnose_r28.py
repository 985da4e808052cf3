"""Round 28, read from held24 after it was scored: Toolbx failing to apply the NVIDIA CDI mounts, hashcat's
own out-of-memory, "No binary for GPU" as programs word CUDA_ERROR_NO_BINARY_FOR_GPU, and a machine's specs
that name another vendor's GPU. Real lines from threads outside every evaluation set."""

from __future__ import annotations

import pytest

from conftest import diagnosed_code
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode


@pytest.mark.parametrize(
    "line",
    [
        # containers/toolbox#1577 (the fix's description quotes the failure)
        "  failed to apply mount from Container Device Interface for NVIDIA",
        # ublue-os/hwe#298
        "failed to apply mount from Container Device Interface for NVIDIA",
    ],
    ids=["toolbox", "hwe"],
)
def test_toolbx_failing_to_apply_the_nvidia_cdi_mounts_starts_no_gpu_container(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.CONTAINER_NO_GPU


@pytest.mark.parametrize(
    "line",
    [
        # hashcat/hashcat#1662
        "* Device #5: Not enough allocatable device memory for this attack.",
        # hashcat/hashcat#3275 (a 1 GB GeForce GT 630)
        "* Device #1: Not enough allocatable device memory for this attack.",
    ],
    ids=["1662", "3275"],
)
def test_hashcats_attack_that_does_not_fit_the_gpu_is_out_of_memory(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.TRAINING_FAILED


def test_no_binary_for_gpu_in_a_programs_words_is_a_gpu_outside_the_build() -> None:
    # beagle-dev/beagle-lib#92 (a Tesla K20m)
    line = 'CUDA error: "No binary for GPU" from file <GPUInterfaceCUDA.cpp>, line 257.'
    assert diagnosed_code(line) == ExitCode.UNSUPPORTED_GPU


# alicevision/Meshroom#2140: the issue template's specs
AMD_SPEC_2140 = "- GPU: [AMD Radeon 6700XT, 12GB of useless VRAM]"
# alicevision/Meshroom#218: the same program's failure on an AMD card (the answer: AMD GPUs are unsupported)
INSUFFICIENT_218 = (
    "[11:15:01.772700][error] cudaGetDeviceCount failed: CUDA driver version is insufficient for CUDA runtime"
    " version"
)


def test_specs_naming_another_vendors_gpu_say_there_is_no_nvidia_gpu() -> None:
    assert "no-nvidia-gpu" in diagnose(AMD_SPEC_2140).evidence
    assert diagnosed_code(INSUFFICIENT_218) == ExitCode.DRIVER_TOO_OLD
    assert diagnosed_code(AMD_SPEC_2140, INSUFFICIENT_218) == ExitCode.NO_DRIVER


def test_a_graphics_list_whose_first_card_is_intel_is_no_such_spec() -> None:
    # alicevision/Meshroom#260: inxi lists an Intel card first and the NVIDIA one on the next line
    line = "Graphics:  Card-1: Intel UHD Graphics 620 bus-ID: 00:02.0 chip-ID: 8086:5917"
    assert "no-nvidia-gpu" not in diagnose(line).evidence
