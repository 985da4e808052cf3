"""Driver-level failures (no driver, driver too old, CUDA libraries missing, GPU unsupported, the job's own
out-of-memory) in the words of other frameworks and tools than TensorFlow, read as the contract code of their
cause.

Real lines copied from public threads are in tests/fixtures/logs/real_lines.yaml (round 17 block). The lines
below are NOT copied from threads: each puts values into a format string of the program that prints it, at the
commit named beside it, for the forms no thread at hand showed on their own:

- PyTorch's out-of-memory message (c10/cuda/CUDACachingAllocator.cpp at pytorch/pytorch
  eb42ad6eca0ce61e7c581212b4bf32f991425571: "CUDA out of memory. Tried to allocate X. GPU N has a total
  capacity of Y of which Z is free. ..."; before 2.1 "... Tried to allocate X (GPU N; Y total capacity;
  Z already allocated; W free; V reserved in total by PyTorch)", pytorch/pytorch#13751) with its head cut off
  by the paste, and its exception class torch.cuda.OutOfMemoryError;
- MXNet's storage manager (src/storage/pooled_storage_manager.h at apache/mxnet
  1d06b81f200ec7b9a3d8cf8b45ba5b4e1ed7843a: "cudaMalloc failed: " + cudaGetErrorString) and CUDA_CALL
  (src/common/cuda/utils.h at b84609d3fc73d20929c114eab95faaa56e6c5ede: "CUDA: " + cudaGetErrorString);
  cudaErrorMemoryAllocation's string is "out of memory";
- CuPy's memory pool (cupy/cuda/memory.pyx at cupy/cupy 6b6d9563c4f7410cd1866a11b2f71a60dd45a68c:
  "Out of memory allocating {:,} bytes (allocated so far: {:,} bytes).") and its library loader
  (cupy_backends/cuda/_softlink.pyx: "CuPy failed to load {libname}: {type}: {error}");
- numba (numba/cuda/cudadrv/driver.py and nvvm.py at numba/numba 5340f052d01403b12480fa19e596200ee0d0e131:
  "%s has compute capability < %s" with the device's repr and the minimum tuple, "libNVVM cannot be found. Do
  `conda install cudatoolkit`:\\n%s");
- nvidia-docker 1.0's first check (tools/src/nvidia-docker/utils.go at NVIDIA/nvidia-docker
  9313351828e9c5d39323e6269e2560eeaffc7388: "unsupported CUDA version: %s < %s", image label, driver's CUDA).
"""

from __future__ import annotations

import pytest

from tfdist_validate.diagnose import diagnose

FORMATS = [
    # PyTorch, head of the message cut off: the job's own out-of-memory (41)
    (
        "Tried to allocate 20.00 MiB (GPU 0; 3.82 GiB total capacity; 2.91 GiB already allocated;"
        " 12.50 MiB free; 2.95 GiB reserved in total by PyTorch)",
        41,
    ),
    (
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.21 GiB is free."
        " Of the allocated memory 20.10 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch"
        " but unallocated.",
        41,
    ),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory.", 41),
    # MXNet
    ("[10:15:07] src/storage/./pooled_storage_manager.h:79: cudaMalloc failed: out of memory", 41),
    (
        "MXNetError: [10:15:07] src/storage/gpu_device_storage.h:56: Check failed: e == cudaSuccess || e =="
        " cudaErrorCudartUnloading CUDA: out of memory",
        41,
    ),
    # CuPy
    (
        "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so far:"
        " 3,221,225,472 bytes).",
        41,
    ),
    # CuPy and numba missing CUDA toolkit libraries (22)
    (
        "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object"
        " file: No such file or directory",
        22,
    ),
    (
        "numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:",
        22,
    ),
    # numba's minimum compute capability (23)
    (
        "numba.cuda.cudadrv.error.CudaSupportError: <CUDA device 0 'b'Quadro K2000''>"
        " has compute capability < (3, 5)",
        23,
    ),
    # nvidia-docker 1.0: the image's CUDA (first) is newer than the driver's (second): driver too old (13)
    ("nvidia-docker | 2016/06/01 10:00:00 Error: unsupported CUDA version: 8.0 < 7.5", 13),
]


@pytest.mark.parametrize(("line", "code"), FORMATS, ids=[line[:60] for line, _ in FORMATS])
def test_another_programs_words_name_the_code_of_their_cause(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code


def test_the_cut_pytorch_message_still_reads_memory_held_by_others() -> None:
    """The head-less PyTorch message carries the GPU's figures: where others held most of the GPU, the
    memory-held re-reading (31) still decides, as it does for the whole message."""
    line = (
        "Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 96.00 MiB already allocated; 8.81 MiB"
        " free; 100.00 MiB reserved in total by PyTorch)"
    )
    assert int(diagnose(line).code) == 31


@pytest.mark.parametrize(
    "line",
    [
        # nvidia-docker's query of the driver failed: no driver at all, not an old one
        "nvidia-docker | 2016/06/01 10:00:00 Error: unsupported CUDA version: 8.0 < 0.0",
        # XLA falls back to the driver when it cannot start ptxas for its autotuner: the run goes on
        "W tensorflow/stream_executor/gpu/redzone_allocator.cc:312] Internal: Failed to launch ptxas",
        # PyTorch's allocator figures without "Tried to allocate": a memory summary, not a failure
        "|===========================================================================|",
        "GPU 0 has a total capacity of 23.65 GiB",
        # an except clause in pasted code names the class without a message
        "    except torch.cuda.OutOfMemoryError:",
        # the driver library is not one of CUDA's toolkit libraries: left to the no-driver signatures
        "OSError: libfoo.so.1: cannot open shared object file: No such file or directory",
    ],
)
def test_near_misses_are_not_failures(line: str) -> None:
    assert int(diagnose(line).code) == 0


# CUDA's error 34 by the names the driver and runtime APIs give it (numba/cuda/cudadrv/enums.py at
# 5340f052d01403b12480fa19e596200ee0d0e131: CUDA_ERROR_STUB_LIBRARY = 34), in numba's CudaAPIError format
# ("[%s] Call to %s results in %s") and the checkCudaErrors "code=N(name)" form
STUB = [
    "numba.cuda.cudadrv.driver.CudaAPIError: [34] Call to cuInit results in CUDA_ERROR_STUB_LIBRARY",
    'CUDA error at main.cu:12 code=34(cudaErrorStubLibrary) "cudaGetDeviceCount(&n)"',
]


@pytest.mark.parametrize("line", STUB)
def test_the_stub_libcuda_is_a_loader_path_problem(line: str) -> None:
    assert int(diagnose(line).code) == 22


# status names of CUDA's libraries and cuDNN (cuSOLVER's and cuRAND's as CuPy raises them, cupy_backends/cuda/
# libs/cusolver.pyx and curand.pyx at 6b6d9563c4f7410cd1866a11b2f71a60dd45a68c: the exception's text is the
# name; cuDNN's in PyTorch's "cuDNN error: <name>" form, as mav-rik/facerestore_cf#27 shows it)
LIBRARY_STATUS = [
    ("cupy_backends.cuda.libs.cusolver.CUSOLVERError: CUSOLVER_STATUS_ARCH_MISMATCH", 23),
    ("cupy_backends.cuda.libs.curand.CURANDError: CURAND_STATUS_ARCH_MISMATCH", 23),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", 23),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", 22),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_VERSION_MISMATCH", 22),
]


@pytest.mark.parametrize(("line", "code"), LIBRARY_STATUS, ids=[line for line, _ in LIBRARY_STATUS])
def test_a_library_status_name_names_its_code(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code
