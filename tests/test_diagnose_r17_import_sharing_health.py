"""Round 17: TensorFlow import failures below Python, GPUs another process or the compute mode will not
share, and GPU health as monitors report it, each read as the one contract code its cause means.

The facts are the printing programs' own, read in their sources at the commits named here:
- TensorFlow: tensorflow/python/pywrap_tensorflow.py at 0304934138cbfabd338ec432a630a9c3c1191564 (the
  text raised around a failed load of the native runtime) and tensorflow/python/platform/self_check.py
  at 09746cd5cf7ea63f048f0ffa57fd5964a0c9b382 (the pre-load checks).
- CUDA's 216 and 805-810 (CUDA_ERROR_CONTEXT_ALREADY_IN_USE and the MPS errors, with the runtime's names
  from CUDA 10.1 on): the same table as numba/cuda/cudadrv/enums.py at
  5340f052d01403b12480fa19e596200ee0d0e131.
- OpenMM's CudaContext (platforms/cuda/src/CudaContext.cpp at 1a47c2f68439c579e27666e5f985ea1a46dd105a:
  "<prefix>: <cuGetErrorName> (<number>) at <file>:<line>"; commit
  43926c46ddf720468bf60a4f10dce60c36f1ad53 retries the next GPU because a process-exclusive GPU refuses
  the context).
- Charm++'s hybrid API (src/arch/cuda/hybridAPI/hapi_impl.cpp at
  ef980345e7b7010e603645f58b5f0b2a584fc9d0, "Fatal CUDA Error [%d] %s at %s:%d"; before
  01df5366006a6776c217667cd1399ac04a2d9829: "Fatal CUDA Error %s at %s:%d.\\n Return value %d from
  '%s'.").
- GROMACS (src/gromacs/hardware/device_management.cu and device_information.h at
  b1a82ec1956eb9658d33f3ec6f3adfdbb6b53a7b: "#%d: NVIDIA %s, compute cap.: %d.%d, ECC: %3s, stat: %s",
  where the status "unavailable" is DeviceStatus::Unavailable, busy or exclusive / prohibited).
- CNTK (Source/Common/BestGpu.cpp at 0179f8bfceb323670744dcec6f0826f9350957de: "LockDevice: Failed to
  lock GPU %d for exclusive use.").
- The Kubernetes device plugin (internal/rm/health.go at 1b826acc6af3079d8923bac395c3124b8861a9a6).
- DCGM's failure messages (dcgmlib/dcgm_errors.h at 72fa3feaa67d716a75323a8f47c34ff3ee73f824) and `dcgmi
  health`'s verdict table (dcgmi/Health.cpp and dcgmi/tests/HealthTests.cpp at the same commit).
- nvidia-smi -q's field names: ../shared/fixtures/real/nvidia-smi-q_*.txt; HW Slowdown's meaning: nvml.h's
  clocks event reasons.
The lines below put each message into its program's format; the real lines of public threads are in
tests/fixtures/logs/real_lines.yaml ("round 17" block).
"""

from __future__ import annotations

import pytest

from tfdist_validate.diagnose import diagnose

IMPORT = [
    # pywrap_tensorflow.py's text around the ImportError, today's wording and TensorFlow 1.x's
    "See https://www.tensorflow.org/install/errors for some common causes and solutions.",
    "If you need help, create an issue at https://github.com/tensorflow/tensorflow/issues and include"
    " the entire stack trace above this error message.",
    "for some common reasons and solutions.  Include the entire stack trace",
    # the frames of the load, as Python and IPython print them
    '  File "/opt/conda/lib/python3.11/site-packages/tensorflow/python/pywrap_tensorflow.py", line 73,'
    " in <module>",
    "~/.local/lib/python3.6/site-packages/tensorflow/python/pywrap_tensorflow.py in <module>",
    '  File "/usr/lib/python3.7/site-packages/tensorflow_core/python/pywrap_tensorflow_internal.py", line 28,'
    " in <module>",
    # Windows' loader naming the module
    "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The specified procedure could"
    " not be found.",
    # self_check.py
    "ImportError: Could not import tensorflow. Do not import tensorflow from its source directory; change"
    " directory to outside the TensorFlow source tree, and relaunch your Python interpreter from there.",
    "ImportError: Found conflicting TensorFlow installations in this environment: tensorflow 2.20.0,"
    " tensorflow-cpu 2.19.0. These distributions install into the same directory",
    "ImportError: TensorFlow requires a 64-bit Python interpreter, but this interpreter is 32-bit.",
    "ImportError: Could not find 'msvcp140.dll'. TensorFlow requires that this DLL be installed in a"
    " directory that is named in your %PATH% environment variable.",
    # the loader's refusal in its other forms: CXXABI, ",required by", no requiring binary, other C libraries
    "ImportError: /lib64/libstdc++.so.6: version `CXXABI_1.3.11' not found (required by"
    " /opt/venv/lib/python3.9/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so)",
    "/lib64/libc.so.6: version `GLIBC_2.17' not found, required by"
    " /opt/venv/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so",
    "/lib64/libm.so.6: version `GLIBC_2.23' not found",
    "libstdc++.so.6: version `GLIBCXX_3.4.26' not found",
    "OSError: /lib/x86_64-linux-gnu/libpthread.so.0: version `GLIBC_2.30' not found",
    # pip's UnsupportedWheel for TensorFlow's wheels
    "ERROR: tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl is not a"
    " supported wheel on this platform.",
    "tensorflow_gpu-1.0.1-cp34-cp34m-linux_x86_64.whl is not a supported wheel on this platform.",
    # no TensorFlow in this interpreter, or no native module (Python 2's wording has no quotes)
    "ImportError: No module named tensorflow",
    "ModuleNotFoundError: No module named 'tensorflow.python._pywrap_tensorflow_internal'",
    # protobuf 4 refusing TensorFlow's generated modules (google/protobuf/descriptor.py's message)
    "TypeError: Descriptors cannot be created directly.",
]


@pytest.mark.parametrize("line", IMPORT)
def test_an_import_failure_below_python_is_20(line: str) -> None:
    assert int(diagnose(line).code) == 20


SHARING = [
    # 216 by name and number, in the forms the table already reads numbers in, and StreamExecutor's CHECK
    'CUDA error at train.cu:42 code=216(cudaErrorDeviceAlreadyInUse) "cudaSetDevice(dev)"',
    "jcuda.CudaException: CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
    "RuntimeError: cuda runtime error (216) at /opt/THC/THCGeneral.cpp:70",
    "F0101 syncedmem.cpp:19] Check failed: error == cudaSuccess (216 vs. 0)",
    "F tensorflow/stream_executor/cuda/cuda_driver.cc:209] Check failed: CUDA_SUCCESS =="
    " cuCtxSetCurrent(cuda_context->context()) (0 vs. 216)",
    # a context refused with INVALID_DEVICE: OpenMM's format, a driver-API caller, OpenCL
    "exception: Error initializing Context: CUDA_ERROR_INVALID_DEVICE (101) at /src/CudaContext.cpp:152",
    "cuCtxCreate failed: CUDA_ERROR_INVALID_DEVICE",
    "pyopencl._cl.LogicError: clCreateContext failed: INVALID_DEVICE",
    # a context refused for want of memory (PyCUDA's "<call> failed: <cuGetErrorString>", OpenMM's format)
    "pycuda._driver.MemoryError: cuCtxCreate failed: out of memory",
    "Error initializing Context: CUDA_ERROR_OUT_OF_MEMORY (2) at /src/CudaContext.cpp:152",
    # Charm++ before 2018 (the number alone)
    "Return value 46 from 'cudaMalloc(&devBuffer, size)'.  Exiting.",
    # GROMACS's GPU list, CNTK's lock, nvidia-smi -q
    "    #0: NVIDIA Tesla K80, compute cap.: 3.7, ECC: yes, stat: unavailable",
    "LockDevice: Failed to lock GPU 0 for exclusive use.",
    "    Compute Mode                          : Prohibited",
    "    Compute Mode                          : Exclusive_Thread",
    # MPS refusing the client (805-810) by name and number
    "RuntimeError: CUDA error: CUDA_ERROR_MPS_SERVER_NOT_READY",
    'CUDA error at main.cu:17 code=808(cudaErrorMpsMaxClientsReached) "cudaSetDevice(0)"',
    "RuntimeError: cuda runtime error (810) at /opt/THC/THCGeneral.cpp:70",
    "CUDA error: 806",
]


@pytest.mark.parametrize("line", SHARING)
def test_a_gpu_that_refuses_another_context_is_31(line: str) -> None:
    assert int(diagnose(line).code) == 31


HEALTH = [
    # the device plugin, both formats
    "I0809 13:32:51.873541       1 health.go:185] XidCriticalError: Xid=48 on Device=GPU-3b6ec030;"
    " marking device as unhealthy.",
    "2020/08/10 19:09:42 XidCriticalError: Xid=79 on Device=GPU-7540a9b3, the device will go unhealthy.",
    # DCGM
    "Detected 2 volatile double-bit ECC error(s) in GPU 3.",
    "A pending retired page has been detected in GPU 0.",
    "60 or more retired pages have been detected in GPU 1. ",
    "CUDA APIs have indicated that a double-bit ECC error has occured on GPU 2.",
    "GPU 0 had uncorrectable memory errors and row remapping failed.",
    "GPU 5 had uncorrectable memory errors and 3 rows were remapped",
    "GPU 5 exceeded uncorrectable row remap limit with 512 remapped rows",
    "GPU 4 had memory errors and row remappings are pending",
    "GPU had an uncontained error (XID 95)",
    "Pending page retirements together with a DBE were detected on GPU 1.",
    "Detected XID 79 for GPU 6",
    "GPU 2 requires a reset to recover from a fault. Recovery action: 2 (GPU_RESET).",
    "GPU 2 fault may have left the OS in an inconsistent state. Recovery action: 3 (NODE_REBOOT).",
    "Found 12 faulty memory elements on GPU 7",
    "| Overall Health            | Failure                                                  |",
    # nvidia-smi -q
    "        Pending Page Blacklist                         : Yes",
    "        Remapping Failure Occurred                     : Yes",
    "        Reset Required                    : Yes",
    "        Drain and Reset Recommended       : Yes",
    "        HW Slowdown                                    : Active",
    "            HW Power Brake Slowdown                    : Active",
    # the older Xid line
    "May 10 22:25:01 node7 kernel: [176830.774761] NVRM: Xid (0000:03:00): 48, An uncorrectable double"
    " bit error",
]


@pytest.mark.parametrize("line", HEALTH)
def test_a_monitor_reporting_a_failing_gpu_is_31(line: str) -> None:
    assert int(diagnose(line).code) == 31


HARMLESS = [
    # a healthy GPU's fields, and the modes in which TensorFlow works
    "        Pending Page Blacklist                         : No",
    "        Remapping Failure Occurred                     : No",
    "    Compute Mode                                       : Default",
    "        Reset Required                    : No",
    "| Overall Health            | Warning                                                  |",
    "| Overall Health            | Healthy                                                  |",
    "        Drain and Reset Recommended       : N/A",
    "        HW Slowdown                                    : Not Active",
    "        SW Power Cap                      : Active",
    "        SW Thermal Slowdown                            : Active",
    "    Compute Mode                                       : Exclusive_Process",
    "| 28%   34C    P8    13W / 250W |      1MiB / 11178MiB |      0%   E. Process |",
    "    #0: NVIDIA A100-SXM4-40GB, compute cap.: 8.0, ECC: yes, stat: compatible",
    "LockDevice: Locked GPU 0 for exclusive use.",
    "Return value 0 from 'cudaStreamCreate(&kernel_stream)'",
    # other programs' wheels and loader refusals are not TensorFlow's
    "tensorflow_fold-0.0.1-cp27-cp27mu-manylinux1_x86_64.whl is not a supported wheel on this platform.",
    "/lib64/libc.so.6: version `GLIBC_2.28' not found (required by node)",
    # a missing TensorFlow submodule or add-on is a version question of the job's code
    "ModuleNotFoundError: No module named 'tensorflow.contrib'",
    "ModuleNotFoundError: No module named 'tensorflow_addons'",
    # a training error's traceback passes through TensorFlow's Python, not through the native-library load
    '  File "/usr/local/lib/python3.10/dist-packages/tensorflow/python/eager/execute.py", line 53,'
    " in quick_execute",
    # the device plugin ignoring an application Xid, and an NVLink Xid (the nvlink-error entry's)
    "I0101 00:00:00.000000       1 health.go:64] Ignoring the following XIDs for health checks:"
    " [13 31 43 45 68 109]",
]


@pytest.mark.parametrize("line", HARMLESS)
def test_healthy_states_and_other_programs_lines_stay_harmless(line: str) -> None:
    assert int(diagnose(line).code) == 0


def test_the_import_traceback_gives_way_to_the_cause_it_names() -> None:
    """The frames say only that the import failed: a missing CUDA library named in the same traceback
    decides."""
    log = "\n".join(
        [
            '  File "/usr/lib/python3/site-packages/tensorflow/python/pywrap_tensorflow.py", line 58,'
            " in <module>",
            "    from tensorflow.python.pywrap_tensorflow_internal import *",
            "ImportError: libcublas.so.9.0: cannot open shared object file: No such file or directory",
        ]
    )
    result = diagnose(log)
    assert int(result.code) == 22
    assert "tf-import-native-load-failed" not in {f.signature.id for f in result.findings}


def test_the_import_traceback_in_a_container_reads_as_the_containers_gpu_access() -> None:
    """A TensorFlow 1.x GPU build links libcuda.so.1 at import: cut before the ImportError, its load failing
    in a container started without the NVIDIA runtime is the container's GPU access (11)."""
    log = "\n".join(
        [
            "root@3f2a1b4c5d6e:/# python -c 'import tensorflow'",
            '  File "/usr/local/lib/python2.7/dist-packages/tensorflow/python/pywrap_tensorflow.py",'
            " line 41, in <module>",
        ]
    )
    assert int(diagnose(log).code) == 11


def test_a_refused_context_under_wsl2_is_the_passthrough() -> None:
    log = "Linux DESKTOP-AB12CDE 5.15.153.1-microsoft-standard-WSL2\n" + (
        "cuCtxCreate failed: CUDA_ERROR_INVALID_DEVICE"
    )
    assert int(diagnose(log).code) == 12
