"""Round 25, read from held20 and held21 after they were scored: a kernel fault on an overclocked GPU is the
GPU's (31), with real lines from threads outside every evaluation set."""

from __future__ import annotations

from conftest import diagnosed_code
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
