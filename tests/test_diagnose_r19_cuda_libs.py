"""Round 19: CUDA libraries that TensorFlow (and other programs beside it) could not load, in the words of
TensorFlow 1.x's Windows self-check script and of the dynamic loader when two releases of one CUDA library are
mixed; and TensorFlow's generic native-runtime failure giving way to the CUDA library its ImportError names.

Real lines copied from public threads are in tests/fixtures/logs/real_lines.yaml (round 19, CUDA libraries).
The lines below are NOT copied from threads: they put other values into the printing program's wording:

- tensorflow_self_check.py (https://gist.github.com/mrry/ee5dbcfdd045fa48a27d56664411d41c, the script
  TensorFlow's maintainers pointed Windows users to in tensorflow/tensorflow#5949): per DLL it cannot load,
  "Could not load '<dll>'. The GPU version of TensorFlow requires ...", and "Could not find cuDNN[ <n>]." for
  the cuDNN it looked for;
- glibc's dynamic loader (elf/dl-lookup.c): "symbol %s version %s not defined in file %s with link time
  reference" and "undefined symbol: %s, version %s", here with a CUDA library's version node.
"""

from __future__ import annotations

import pytest

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
