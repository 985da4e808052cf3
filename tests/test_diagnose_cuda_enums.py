"""CUDA's own error enums, in the forms programs print them, read as the one contract code each means.

The facts (names and numbers) are CUDA's: the driver API's CUresult and the runtime API's cudaError
(https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html,
https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html; the same table as numba's
numba/cuda/cudadrv/enums.py at 5340f052d01403b12480fa19e596200ee0d0e131). The lines below are NOT copied from
threads: each puts one enum into a printer's known format (the CUDA samples' checkCudaErrors "code=N(name)",
PyTorch's old "cuda runtime error (N)", Caffe's "error == cudaSuccess (N vs. 0)", llama.cpp's "CUDA error N
at", Ollama's "init failure: N"), so that every name and number the table now knows is checked, including
those no public thread showed with the name or number alone. The real lines are in
tests/fixtures/logs/real_lines.yaml.
"""

from __future__ import annotations

import pytest

from tfdist_validate.diagnose import diagnose

# (enum name as printed, number, contract code it means); only errors whose meaning does not depend on context
NAMES = [
    ("cudaErrorNoDevice", 100, 10),
    ("cudaErrorNoKernelImageForDevice", 209, 23),
    ("cudaErrorECCUncorrectable", 214, 31),
    ("CUDA_ERROR_NVLINK_UNCORRECTABLE", 220, 40),
    ("cudaErrorNvlinkUncorrectable", 220, 40),
    ("CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", 217, 40),
    ("cudaErrorSystemDriverMismatch", 803, 13),
    ("cudaErrorCompatNotSupportedOnDevice", 804, 13),
    ("cudaErrorInvalidPtx", 218, 23),
    ("cudaErrorMemoryAllocation", 2, 41),
]

# numbers that mean the same error in both APIs and in every CUDA release (the runtime's numbering changed in
# CUDA 10.1, e.g. "no device" was 38 before; 35 and 46 kept theirs, the others did not exist before it)
NUMBERS = [
    (100, 10),
    (35, 13),
    (46, 31),
    (209, 23),
    (214, 31),
    (217, 40),
    (220, 40),
    (222, 13),
    (803, 13),
    (804, 13),
]


@pytest.mark.parametrize(("name", "number", "code"), NAMES, ids=[n for n, _, _ in NAMES])
def test_an_enum_name_alone_names_its_code(name: str, number: int, code: int) -> None:
    line = f'CUDA error at train.cu:42 code={number}({name}) "cudaDeviceSynchronize()"'
    assert int(diagnose(line).code) == code


@pytest.mark.parametrize(("number", "code"), NUMBERS, ids=[str(n) for n, _ in NUMBERS])
@pytest.mark.parametrize(
    "form",
    [
        "CUDA error {n} at /src/ggml-cuda.cu:6701",
        "RuntimeError: cuda runtime error ({n}) at /opt/THC/THCGeneral.cpp:70",
        "F0101 syncedmem.cpp:19] Check failed: error == cudaSuccess ({n} vs. 0)",
        "CUDA error: {n}",
        'msg="Unable to load cudart library libcuda.so.1: cuda driver library init failure: {n}"',
        'msg="Unable to load cudart library libcudart.so.12: cudart init failure: {n}"',
    ],
)
def test_a_number_the_line_calls_a_cuda_error_names_its_code(form: str, number: int, code: int) -> None:
    assert int(diagnose(form.format(n=number)).code) == code


@pytest.mark.parametrize(
    "line",
    [
        # the same numbers where nothing says they are CUDA errors: progress, sizes, other libraries' statuses
        "Epoch 46/100 - 214s - loss: 0.0803 - accuracy: 0.9209",
        "100/100 [==============================] - 35s 209ms/step - loss: 0.2220",
        "Check failed: status == CURAND_STATUS_SUCCESS (201 vs. 0)",
        "HTTP error 804 while downloading; retrying",
        # a CUDA error whose number is a line number, not the error
        "CUDA error at line 100 of kernel.cu",
    ],
)
def test_a_number_alone_is_not_a_cuda_error(line: str) -> None:
    assert int(diagnose(line).code) == 0
