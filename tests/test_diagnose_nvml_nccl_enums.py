"""NVML's return codes and NCCL's own failure messages, in the forms programs print them, read as the one
contract code each means.

The facts are the libraries': NVML's nvmlReturn_t (nvml.h; the same table as pynvml.py's NVML_ERROR_*
constants, from which pynvml builds its NVMLError_* class names, https://docs.nvidia.com/deploy/nvml-api/)
and NCCL's ncclResult_t, ncclGetErrorString and WARN texts (src/init.cc, src/bootstrap.cc,
src/include/checks.h and src/include/cudawrap.h at NVIDIA/nccl 5067397c2676d5aed50042fc39e5c8ee96eb0027).
The lines below are NOT copied from threads: each puts one return code or message into a printer's known
format (pynvml's exception, go-nvml's enum name after "nvml", nvidia-smi's device-handle message, the
container CLI's "nvml error: ...", NCCL's "host:pid:tid [dev] file:line NCCL WARN ..." prefix, PyTorch's
"NCCL error in: ..."), so that every form the table now knows is checked, including those no public thread
showed. The real lines are in tests/fixtures/logs/real_lines.yaml.

Left to context on purpose (no code of their own here): NVML's Unknown Error (999: a container that lost its
devices, a sick GPU or a driver fault alike; nvml-unknown-error reads it only at NVML's initialisation), Not
Supported (3: a query this GPU or driver lacks, printed by monitoring tools on healthy GPUs), Insufficient
Permissions (4: a query that needs root), Uninitialized (1: a caller's bug), Corrupted infoROM (14:
nvidia-smi warns of it on GPUs that go on working).
"""

from __future__ import annotations

import pytest

from tfdist_validate.diagnose import diagnose

NVML = [
    # return code 9, NVML_ERROR_DRIVER_NOT_LOADED: no driver (10)
    ("pynvml.nvml.NVMLError_DriverNotLoaded: Driver Not Loaded", 10),
    ("Failed to initialize NVML: ERROR_DRIVER_NOT_LOADED", 10),
    ("nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED", 10),
    # 12, NVML_ERROR_LIBRARY_NOT_FOUND: no driver library (10)
    ("pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found", 10),
    ("nvmlInit returned NVML_ERROR_LIBRARY_NOT_FOUND", 10),
    # 18, NVML_ERROR_LIB_RM_VERSION_MISMATCH: driver libraries and kernel module differ (10)
    ("pynvml.nvml.NVMLError_LibRmVersionMismatch: Driver/library version mismatch", 10),
    ("Failed to initialize NVML: ERROR_LIB_RM_VERSION_MISMATCH", 10),
    ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", 10),
    # 15, NVML_ERROR_GPU_IS_LOST, and 16, NVML_ERROR_RESET_REQUIRED: the GPU is unusable until reset (31)
    ("pynvml.nvml.NVMLError_GpuIsLost: GPU is lost", 31),
    ("error getting device handle for index '0': nvml: ERROR_GPU_IS_LOST", 31),
    ("nvmlDeviceGetHandleByIndex failed: NVML_ERROR_GPU_IS_LOST", 31),
    ("pynvml.nvml.NVMLError_ResetRequired: GPU requires reset", 31),
    ("nvmlDeviceGetUtilizationRates returned NVML_ERROR_RESET_REQUIRED", 31),
    ("failed to get device 3: nvml: ERROR_RESET_REQUIRED", 31),
    ("nvidia-container-cli: detection error: nvml error: gpu requires reset", 31),
    ("Unable to determine the device handle for GPU0000:3B:00.0: GPU requires reset", 31),
]


@pytest.mark.parametrize(("line", "code"), NVML, ids=[line for line, _ in NVML])
def test_an_nvml_return_code_names_its_code(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code


NCCL = [
    # ncclGetErrorString's texts and the numbered results, as callers print them: a collective failure (40)
    ("RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for details)", 40),
    ("RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers", 40),
    ("NCCL Error 3: internal error", 40),
    ("NCCL Error 6: remote process exited or there was a network error", 40),
    ("what():  remote process exited or there was a network error, NCCL version 2.18.1", 40),
    (
        "h1:5:9 [1] init.cc:904 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a",
        40,
    ),
    # NCCL's bootstrap and socket WARNs
    ("h1:5:9 [0] bootstrap.cc:126 NCCL WARN Bootstrap : no socket interface found", 40),
    ("h1:5:9 [0] bootstrap.cc:120 NCCL WARN NET/Socket : No usable listening interface found", 40),
    ("h1:5:9 [0] misc/socket.cc:484 NCCL WARN Call to connect returned Connection refused, retrying", 40),
    # NCCL's own buffers not fitting in GPU memory: a collective set-up failure (40), as the project's labels
    # read it (tensorflow#36510, NVIDIA/nccl#295 in tests/fixtures/diagnose_eval), not the job's own OOM (41)
    ("h1:5:9 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", 40),
    ("h1:5:9 [0] include/alloc.h:118 NCCL WARN Cuda failure 2 'out of memory'", 40),
    # a CUDA failure NCCL's checks report names its own cause where the CUDA error is another contract code
    (
        "init.cc:1110 NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
        13,
    ),
    (
        "p2p.cc:238 NCCL WARN Cuda failure 'peer access is not supported between these two devices'",
        40,
    ),
    # a CUDA failure without a contract code of its own stays NCCL's
    ("h1:5:9 [0] enqueue.cc:54 NCCL WARN Cuda failure 'invalid resource handle'", 40),
]


@pytest.mark.parametrize(("line", "code"), NCCL, ids=[line for line, _ in NCCL])
def test_an_nccl_failure_names_its_code(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code


@pytest.mark.parametrize(
    "line",
    [
        # NCCL's INFO lines on a healthy start-up (single node, sockets, no plugin)
        "h1:5:5 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
        "h1:5:5 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "h1:5:5 [0] NCCL INFO Using network Socket",
        "h1:5:5 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
        "h1:5:5 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>",
        "h1:5:5 [0] NCCL INFO cudaDriverVersion 12020",
        "h1:5:5 [0] NCCL INFO NET/IB : No device found.",
        "h1:5:5 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        # NVML's names in ordinary text that reports no failure
        "Reset required: No",
        "GPU Reset Status: Reset Not Required",
        "error_rate=0.01 nvml_polling=1s",
    ],
)
def test_harmless_lines_stay_harmless(line: str) -> None:
    assert int(diagnose(line).code) == 0
