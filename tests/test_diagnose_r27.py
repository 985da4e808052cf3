"""Round 27, read from held23 after it was scored: TensorFlow.js for Node without its native binding, R's
crash handler for an illegal instruction, nheqminer's compute-capability floor, an NVML older than the program
that calls it, NVRTC without its builtins library, and nvidia-docker 1.x refusing a Docker release. Real lines
from threads outside every evaluation set."""

from __future__ import annotations

import pytest

from conftest import diagnosed_code, failure_ids
from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# rstudio/keras3#309: reticulate importing TensorFlow into R, on a CPU without the instructions it needs
CAUGHT_309 = " *** caught illegal operation ***"
OPERAND_309 = "address 0x7f0418c0a880, cause 'illegal operand'"


@pytest.mark.parametrize("line", [CAUGHT_309, OPERAND_309], ids=["caught", "operand"])
def test_rs_crash_handler_for_an_illegal_instruction_is_a_failed_import(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.TF_IMPORT_FAILED


TFJS_BINDING = [
    # tensorflow/tfjs#4191 (Ubuntu: a stale node_modules)
    "The Node.js native addon module (tfjs_binding.node) can not be found at path:"
    " /home/sopur/JavaScript/tensorflowtest/node_modules/@tensorflow/tfjs-node/lib/napi-v6/"
    "tfjs_binding.node.",
    # tensorflow/tfjs#4676
    "tfjs_binding.node can not be found at path"
    ' "...\\@tensorflow\\tfjs-node\\lib\\napi-v5\\tfjs_binding.node"',
    # tensorflow/tfjs#2678: Node's resolver
    "Error: Cannot find module"
    " 'D:\\TESA\\tfjs-test\\part2\\node_modules\\@tensorflow\\tfjs-node\\lib\\napi-v5\\tfjs_binding.node'",
    # tensorflow/tfjs#8545: the addon is there, a DLL it needs is not
    "^ Error: The specified module could not be found."
    " \\\\?\\C:\\workspace\\handleremb\\node_modules\\@tensorflow\\tfjs-node\\lib\\napi-v8\\"
    "tfjs_binding.node at"
    " Module._extensions..node (node:internal/modules/cjs/loader:1460:18)",
]


@pytest.mark.parametrize("line", TFJS_BINDING, ids=["addon-check", "short", "resolver", "dlopen"])
def test_tfjs_node_without_its_native_binding_cannot_import_tensorflow(line: str) -> None:
    assert failure_ids(line) == {"tfjs-node-binding-missing"}
    assert diagnosed_code(line) == ExitCode.TF_IMPORT_FAILED


def test_a_missing_module_that_is_not_tfjs_is_not_read_as_tensorflow() -> None:
    # the same resolver's words for any other module (tensorflow/tfjs#2678's require stack names index.js)
    assert "tfjs-node-binding-missing" not in failure_ids(
        "Error: Cannot find module 'D:\\TESA\\tfjs-test\\part2\\node_modules\\express\\index.js'"
    )


@pytest.mark.parametrize(
    "line",
    [
        # nicehash/nheqminer#370, quoted by its reporter
        'but I cant get beyond the error "Only CUDA devices with SM 5.0 and higher are supported"',
        # nicehash/nheqminer#319 (a Tesla K40c, compute capability 3.5), as its reporter wrote it
        "when i run it with GPU, it tells me that only cuda devices with SM5.0 are supported, i used with"
        " tesla K40c",
    ],
    ids=["quoted", "paraphrased"],
)
def test_nheqminers_sm_floor_is_an_unsupported_gpu(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.UNSUPPORTED_GPU


NVML_MISSING = [
    # NVIDIA/nvidia-docker#1280 (driver 410.48)
    "docker: Error response from daemon: OCI runtime create failed: container_linux.go:348:"
    ' starting container process caused "process_linux.go:402: container init caused'
    ' \\"process_linux.go:385: running prestart hook 1 caused \\\\\\"error running hook: exit'
    " status 1, stdout: , stderr: nvidia-container-cli: detection error: nvml error: function"
    ' not found\\\\\\\\n\\\\\\"\\"": unknown.',
    # Syllo/nvtop#32 (driver 340, fixed by 384)
    "nvtop: symbol lookup error: nvtop: undefined symbol: nvmlDeviceGetPcieThroughput",
    # gpuopenanalytics/pynvml#43 (driver 430's library)
    "AttributeError: /usr/lib/nvidia-430/libnvidia-ml.so.1: undefined symbol:"
    " nvmlDeviceGetComputeRunningProcesses_v2",
]


@pytest.mark.parametrize("line", NVML_MISSING, ids=["container-toolkit", "nvtop", "pynvml"])
def test_an_nvml_function_the_driver_lacks_is_a_driver_too_old(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.DRIVER_TOO_OLD
    # the toolkit's generic detection-error entry (no usable driver, 10) steps aside for it (its `unless`)
    assert "container-cli-driver-detection-failed" not in failure_ids(line)


def test_the_toolkits_other_detection_errors_still_name_the_driver() -> None:
    assert (
        diagnosed_code("nvidia-container-cli: detection error: nvml error: unknown error")
        == ExitCode.NO_DRIVER
    )


NVRTC_BUILTINS = [
    # openmm/openmm#1485 (a library path)
    "Exception: Error compiling program: nvrtc: error: failed to load builtins",
    # dmlc/nnvm#408 (TVM on a Jetson TX1)
    "TVMError: [12:49:51] src/codegen/build_cuda.cc:38: Check failed: compile_res == NVRTC_SUCCESS (7 vs. 0)"
    " nvrtc: error: failed to load builtins",
    # WisconsinAIVision/yolact_edge#186 (PyTorch's fuser)
    "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.11.1.",
    # NVIDIA/numba-cuda#196: the status numba-cuda reported before it showed NVRTC's log
    "  Failed to call nvrtcCompileProgram: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
]


@pytest.mark.parametrize("line", NVRTC_BUILTINS, ids=["openmm", "tvm", "pytorch", "numba"])
def test_nvrtc_without_its_builtins_is_a_missing_cuda_library(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.TF_NO_GPU


def test_a_kernel_image_after_a_failed_nvrtc_compile_is_its_echo() -> None:
    # ArrayFire's NVRTC-built kernel reported invalid (arrayfire/arrayfire#2527) reads as a GPU outside the
    # build on its own; after NVRTC's own failure (openmm/openmm#1485's line) it is that failure's echo
    echo = "CU Error CUDA_ERROR_INVALID_IMAGE(200): device kernel image is invalid"
    assert diagnosed_code(echo) == ExitCode.UNSUPPORTED_GPU
    assert diagnosed_code(NVRTC_BUILTINS[0], echo) == ExitCode.TF_NO_GPU


@pytest.mark.parametrize(
    "line",
    [
        # NVIDIA/nvidia-docker#297 (Docker 1.13.0)
        "nvidia-docker | 2017/01/21 06:46:02 Error: unsupported Docker version",
        # NVIDIA/nvidia-docker#372 (Docker 17.03.1-ce)
        "nvidia-docker | 2017/05/12 15:34:57 Error: unsupported Docker version",
    ],
    ids=["1.13.0", "17.03.1"],
)
def test_nvidia_docker_1_refusing_the_docker_version_starts_no_gpu_container(line: str) -> None:
    assert diagnosed_code(line) == ExitCode.CONTAINER_NO_GPU


# NVIDIA/pyxis#96: a docker-exported image run through Slurm's pyxis (the answer: the export dropped
# NVIDIA_VISIBLE_DEVICES, so enroot injected no driver)
SRUN_96 = (
    "srun --ntasks=1 --container-image=./out.squashfs --container-name=language_model --container-writable"
    " --container-workdir=/workspace/bert --container-mounts=./nvidia-smi:/usr/bin/nvidia-smi nvidia-smi"
)
NO_NVML_96 = (
    "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA"
    " Display Driver is properly installed and present in your system. Please also try adding directory that"
    " contains libnvidia-ml.so to your system PATH."
)


@pytest.mark.parametrize(
    "line",
    [
        # NVIDIA/enroot#26
        "$ srun --pty  --gpus=1 --container-image=nvidia/cuda bash",
        'slurmstepd: pyxis: running "enroot start" ...',
        # NVIDIA/pyxis#101
        "slurmstepd: error: pyxis: couldn't start container",
    ],
    ids=["srun-flag", "enroot-start", "pyxis-error"],
)
def test_slurms_pyxis_and_enroot_show_a_container(line: str) -> None:
    assert "container" in diagnose(line).evidence


def test_no_driver_inside_a_pyxis_container_is_the_container_s() -> None:
    assert diagnosed_code(NO_NVML_96) == ExitCode.NO_DRIVER
    assert diagnosed_code(SRUN_96, NO_NVML_96) == ExitCode.CONTAINER_NO_GPU
