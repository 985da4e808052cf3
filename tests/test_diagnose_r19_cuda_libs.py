"""Round 19: CUDA libraries that TensorFlow (and other programs beside it) could not load, in the words of
TensorFlow 1.x's Windows self-check script and of the dynamic loader when two releases of one CUDA library are
mixed; TensorFlow's generic native-runtime failure giving way to the CUDA library its ImportError names; and
optixInit's failures that round 18's OptiX codes left out (7805, and a failure that names no code).

Real lines copied from public threads are in tests/fixtures/logs/real_lines.yaml (round 19, CUDA libraries).
The lines below are NOT copied from threads: they put other values into the printing program's wording:

- tensorflow_self_check.py (https://gist.github.com/mrry/ee5dbcfdd045fa48a27d56664411d41c, the script
  TensorFlow's maintainers pointed Windows users to in tensorflow/tensorflow#5949): per DLL it cannot load,
  "Could not load '<dll>'. The GPU version of TensorFlow requires ...", and "Could not find cuDNN[ <n>]." for
  the cuDNN it looked for;
- glibc's dynamic loader at bminor/glibc 04e750e75b73957cf1c791535a3f4319534a52fc: "symbol FUNCTION-NAME,
  version SYMBOL-VERSION not defined in file DSO-NAME with link time reference" (before 2.30, as NEWS
  says) and "undefined symbol: %s%s%s" with ", version <node>" (elf/dl-lookup.c), here with a CUDA
  library's version node;
- OptiX's loader (include/optix_stubs.h at NVIDIA/optix-dev f1f6dd803f3159992d248178f6e09421c6eb8b6d:
  optixInit returns OPTIX_ERROR_ENTRY_SYMBOL_NOT_FOUND = 7805 for a libnvoptix without
  optixQueryFunctionTable) and instant-ngp's check ("Optix call '" #x "' failed.", src/optix/program.h at
  NVlabs/instant-ngp abe236ee00cf90cfca6e36e65c00435d5b21f50a).
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL
from tfdist_validate.diagnose import diagnose

NATIVE = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.6/dist-packages/tensorflow/python/pywrap_tensorflow.py", line 58,'
    " in <module>",
    "    from tensorflow.python.pywrap_tensorflow_internal import *",
]
FAILED = [
    "Failed to load the native TensorFlow runtime.",
    "See https://www.tensorflow.org/install/errors",
    "for some common reasons and solutions.  Include the entire stack trace",
    "above this error message when asking for help.",
]

FORMATS = [
    # the self-check script, for other DLLs and releases than the threads at hand showed
    ("- Could not load 'cudart64_90.dll'. The GPU version of TensorFlow", 22),
    ("- Could not load 'cudnn64_7.dll'. The GPU version of TensorFlow", 22),
    ("- Could not find cuDNN 5.1.", 22),
    ("- Could not find cuDNN 7.", 22),
    # the loader, for the other CUDA libraries whose symbols are versioned
    (
        "OSError: /opt/conda/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: undefined"
        " symbol: _ZN5cudnn3cnn5infer22queryClusterPropertiesERPhS3_, version libcudnn_ops_infer.so.8",
        22,
    ),
    (
        "ImportError: /usr/local/cuda-11.2/lib64/libcusolver.so.11: symbol cublasLtMatmul, version"
        " libcublasLt.so.11 not defined in file libcublasLt.so.11 with link time reference",
        22,
    ),
]


@pytest.mark.parametrize(("line", "code"), FORMATS, ids=[line[:60] for line, _ in FORMATS])
def test_format_string_lines_name_their_cause(line: str, code: int) -> None:
    assert int(diagnose(line).code) == code


def test_native_runtime_failure_gives_way_to_the_cuda_library_its_import_error_names() -> None:
    missing = "ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory"
    result = diagnose("\n".join([*NATIVE, missing, "", *FAILED]))
    assert int(result.code) == 22
    ids = {f.signature.id for f in result.failures}
    assert "tf-native-runtime" not in ids and "tf-import-native-load-failed" not in ids
    # two copies of cuBLAS behind the same import failure: the libraries again
    mixed = (
        "ImportError: /usr/local/cuda/lib64/libcublas.so.11: undefined symbol: cublasLtGetStatusString,"
        " version libcublasLt.so.11"
    )
    assert int(diagnose("\n".join([*NATIVE, mixed, "", *FAILED])).code) == 22
    # without a named library the import failure stays the import failure (20)
    assert int(diagnose("\n".join(FAILED)).code) == 20


def test_self_check_beside_the_native_runtime_failure_is_the_dll() -> None:
    lines = [
        "ERROR: Failed to import the TensorFlow module.",
        "- TensorFlow is installed at: C:\\Python35\\lib\\site-packages\\tensorflow",
        "- Could not load 'cudart64_80.dll'. The GPU version of TensorFlow",
        "  requires that this DLL be installed in a directory that is named in",
        *FAILED,
    ]
    assert int(diagnose("\n".join(lines)).code) == 22


@pytest.mark.parametrize(
    "line",
    [
        # CMake's FindCUDNN in a build log: a build configuration, not a run that failed to load cuDNN
        "-- Could NOT find CUDNN (missing: CUDNN_INCLUDE_DIR CUDNN_LIBRARY)",
        # ld at link time (AlexeyAB/darknet#8558): a build failure, not a loader refusal at run time
        "/usr/bin/ld: /usr/local/cuda-11.7/lib64/libcublas.so: undefined reference to"
        " `cublasLtGetStatusString@libcublasLt.so.11'",
    ],
)
def test_build_time_lines_are_not_read_as_a_run_that_could_not_load_the_library(line: str) -> None:
    ids = {f.signature.id for f in diagnose(line).failures}
    assert not ids & {"tf-self-check-cuda-dll-missing", "cuda-lib-symbol-version-mismatch"}


def test_the_driver_dll_stays_the_driver() -> None:
    # the driver's nvcuda.dll means no driver (10), in the script's wording as in TensorFlow's self_check.py
    assert int(diagnose("Could not find 'nvcuda.dll'").code) == 10
    line = "- Could not load 'nvcuda.dll'. The GPU version of TensorFlow requires that"
    result = diagnose(line)
    assert int(result.code) == 10
    assert "tf-self-check-driver-dll-missing" in {f.signature.id for f in result.failures}


DOCKER = "$ docker run --rm --gpus all -it myorg/render:latest python render.py"


@pytest.mark.parametrize(
    "line",
    [
        # instant-ngp's OPTIX_CHECK_THROW (src/optix/program.h at abe236ee00cf90cfca6e36e65c00435d5b21f50a)
        "Uncaught exception: Optix call 'optixInit()' failed.",
        # OWL / NVISII's form, with the code optix_stubs.h returns for a libnvoptix lacking
        # optixQueryFunctionTable
        "Optix call (optixInit()) failed with code 7805 (line 150)",
    ],
)
def test_optix_init_failure_reads_as_an_old_driver_by_context(line: str) -> None:
    assert int(diagnose(line).code) == 13
    assert int(diagnose(f"{WSL}\n{line}").code) == 12
    assert int(diagnose(f"{DOCKER}\n{line}").code) == 11


def test_optix_codes_round_18_knew_keep_their_reading() -> None:
    # 7804 (no libnvoptix) stays the missing library; 7801 the ABI; the bare reading gives way to both
    result = diagnose("OPTIX_ERROR_LIBRARY_NOT_FOUND: Optix call 'optixInit()' failed")
    assert int(result.code) == 10
    assert "optix-init-failed" not in {f.signature.id for f in result.failures}
    result = diagnose("OPTIX_ERROR_UNSUPPORTED_ABI_VERSION: Optix call 'optixInit()' failed")
    assert int(result.code) == 13
    assert {f.signature.id for f in result.failures} == {"optix-abi-newer-than-driver"}
