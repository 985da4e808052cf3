"""Round 18: containers (nvidia-docker 1.0's plugin, NVML's "Insufficient Permissions", the toolkit's own
library, the CUDA driver stub), the host driver's state behind a GPU container (CUDA's unknown error 999), a
hosted notebook without a GPU runtime, and CUDA user-space libraries as other programs print them (XLA's NCCL
stub, TensorRT's libnvinfer, the loader's bare words).

Facts from the printing programs' sources: nvidia-docker 1.0 names its driver volume nvidia_driver_<version>
and its volume driver "nvidia-docker" (NVIDIA/nvidia-docker e810688c1bfbf0b4e2afeee7cba711483e040475, branch
1.0: src/nvidia/nvidia.go, src/nvidia-docker/local.go); docker wraps the failed lookup as "error looking up
volume plugin <name>: ..." (moby/moby b985e2313a8676e18072b442911fc8f64f17d440,
daemon/volume/drivers/extpoint.go); glibc's loader prints "<program>: error while loading shared libraries:
<soname>: cannot open shared object file: <strerror>" (bminor/glibc 04e750e75b73957cf1c791535a3f4319534a52fc,
elf/dl-catch.c, elf/dl-load.c); libnvidia-container's sonames are libnvidia-container.so.<major> and
libnvidia-container-go.so.<major> (pop-os/libnvidia-container d17aa6f4960e1d386abadf2288403efa4c1753ab,
Makefile, src/nvcgo/Makefile); XLA's NCCL stub answers "Unable to load NCCL library. Multi-GPU collectives
will not work." when libnccl is missing (openxla/xla 80c095fc2f5ba8b1e8c8b7df79c0be532416dd69,
xla/tsl/cuda/nccl_stub.cc); NVML_ERROR_NO_PERMISSION's string is "Insufficient Permissions"
(tests/fixtures/real/pynvml-error-classes_nvidia-ml-py-13.615.71.json); CUDA error 34's string is "CUDA driver
is a stub library" (CUDA driver API reference, CUresult). Lines marked "built" fill those formats with example
values; the real lines are in tests/fixtures/logs/real_lines.yaml.
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL, diagnosed_code, failure_ids
from tfdist_validate.diagnose import diagnose

# real: a GPU container whose CUDA broke after the host's suspend (NVIDIA/nvidia-container-toolkit#1155)
GPU_START = "docker run -d --gpus=all -v ollama:/root/.ollama -p 11434:11434 --name ollama ollama/ollama"
# real: a container start without a GPU request (tensorflow/tensorflow#41785)
PLAIN_START = (
    "docker run -it -p 8888:8888 tensorflow/tensorflow:latest-gpu-jupyter jupyter notebook --notebook-dir=/tf"
)


@pytest.mark.parametrize(
    "line",
    [
        # built: docker >= 17.06's wording and the socket of a plugin that died
        "docker: Error response from daemon: create nvidia_driver_535.54: error looking up volume plugin"
        " nvidia-docker: plugin not found.",
        "docker: Error response from daemon: create nvidia_driver_390.48: Error looking up volume plugin"
        " nvidia-docker: legacy plugin: Post"
        " http://%2Frun%2Fdocker%2Fplugins%2Fnvidia-docker.sock/Plugin.Activate:"
        " dial unix /run/docker/plugins/nvidia-docker.sock: connect: connection refused.",
    ],
)
def test_nvidia_docker_1_without_its_plugin_is_a_container_without_gpu(line: str) -> None:
    assert diagnosed_code(line) == 11
    assert "nvidia-docker-plugin-not-running" in failure_ids(line)


def test_another_volume_plugin_is_not_nvidia_dockers() -> None:
    line = "docker: Error response from daemon: error looking up volume plugin rexray: plugin not found."
    assert "nvidia-docker-plugin-not-running" not in failure_ids(line)


NVML_DENIED = "Failed to initialize NVML: Insufficient Permissions"


def test_nvml_denied_in_a_container_is_the_containers_access() -> None:
    assert (
        diagnosed_code("podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L", NVML_DENIED) == 11
    )
    assert diagnosed_code("docker run -ti --rm nvidia/cuda:12.4.1-base-ubi9 bash", NVML_DENIED) == 11


def test_nvml_denied_on_a_host_is_the_device_nodes_and_names_the_container_reading() -> None:
    result = diagnose(NVML_DENIED)
    assert int(result.code) == 10
    assert "(11)" in result.failures[0].alternatives


def test_the_device_plugins_no_permission_is_read_the_same() -> None:
    # built: k8s-device-plugin's "init NVML ...; err: <nvml.ErrorString>" with the return code's name
    assert "nvml-insufficient-permissions" in failure_ids("Failed to initialize NVML: ERROR_NO_PERMISSION")


def test_nvidia_container_clis_own_nvml_refusal_stays_the_hosts() -> None:
    line = "nvidia-container-cli: initialization error: nvml error: insufficient permissions"
    assert "nvml-insufficient-permissions" not in failure_ids(line)
    assert diagnosed_code(line) == 10


@pytest.mark.parametrize(
    "line",
    [
        "nvidia-container-cli: error while loading shared libraries: libnvidia-container.so.1: cannot open"
        " shared"
        " object file: No such file or directory",
        "/usr/bin/nvidia-container-cli: error while loading shared libraries: libnvidia-container-go.so.1:"
        " cannot"
        " open shared object file: No such file or directory",
    ],
)
def test_the_toolkits_own_library_missing_is_a_container_without_gpu(line: str) -> None:
    assert diagnosed_code(line) == 11


STUB = (
    "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 34: CUDA driver is a"
    " stub library"
)


def test_the_stub_libcuda_in_a_container_is_the_containers_set_up() -> None:
    assert diagnosed_code("docker run --rm -it sd-image python -c 'import torch'", STUB) == 11
    assert diagnosed_code(PLAIN_START, STUB) == 11


def test_the_stub_libcuda_on_a_host_keeps_its_reading() -> None:
    result = diagnose(STUB)
    assert int(result.code) == 22
    assert "(11)" in result.failures[0].alternatives


# built: TensorFlow's stream executor and PyTorch's CUDA initialisation for CUresult 999
CUINIT_999 = [
    "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: CUDA_ERROR_UNKNOWN:"
    " unknown error",
    "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing"
    " env"
    " variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
]


@pytest.mark.parametrize("line", CUINIT_999)
def test_cuda_unknown_error_in_a_container_that_got_its_gpu_is_the_hosts_driver_state(line: str) -> None:
    result = diagnose(GPU_START + "\n" + line)
    assert int(result.code) == 10
    finding = next(f for f in result.failures if f.signature.id == "cuinit-unknown-error")
    assert finding.context == "container-gpu"
    assert "nvidia_uvm" in finding.alternatives


@pytest.mark.parametrize("line", CUINIT_999)
def test_cuda_unknown_error_keeps_the_container_and_wsl2_readings(line: str) -> None:
    assert diagnosed_code(PLAIN_START, line) == 11
    assert diagnosed_code("nvidia-docker run --rm nvidia/cuda nvidia-smi", WSL, line) == 12
    assert diagnosed_code(line) == 10


@pytest.mark.parametrize(
    "line",
    [
        "Cannot connect to GPU backend",
        "You cannot currently connect to a GPU due to usage limits in Colab.",
    ],
)
def test_a_notebook_that_got_no_gpu_runtime_has_no_driver(line: str) -> None:
    assert diagnosed_code(line) == 10


def test_xlas_nccl_stub_says_the_nccl_library_is_missing() -> None:
    # built: the stub's string where XLA reports the NCCL call that got it
    line = (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: NCCL operation ncclCommInitRank(...) failed:"
        " Unable to"
        " load NCCL library. Multi-GPU collectives will not work."
    )
    assert diagnosed_code(line) == 22
    assert "nccl-library-not-loadable" in failure_ids(line)


@pytest.mark.parametrize(
    "line",
    [
        "./tritonserver: error while loading shared libraries: libnvinfer.so.8: cannot open shared object"
        " file:"
        " No such file or directory",
        "trtexec: error while loading shared libraries: libnvonnxparser.so.10: cannot open shared object"
        " file: No"
        " such file or directory",
        "ImportError: libnvinfer.so.10: cannot open shared object file: No such file or directory",
    ],
)
def test_a_program_that_needs_tensorrt_without_it_lacks_a_cuda_library(line: str) -> None:
    assert diagnosed_code(line) == 22


def test_tensorflows_optional_tensorrt_warning_stays_harmless() -> None:
    line = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library"
        " 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or"
        " directory"
    )
    assert diagnosed_code(line) == 0


@pytest.mark.parametrize(
    "line",
    [
        "libcusolver.so.8.0: cannot open shared object file: No such file or directory",
        "**libcudnn.so.7: cannot open shared object file: No such file or directory**",
    ],
)
def test_the_loaders_bare_words_for_a_cuda_library_are_missing_libraries(line: str) -> None:
    assert diagnosed_code(line) == 22
    assert "cuda-lib-named-missing" in failure_ids(line)


def test_prefixed_forms_stay_with_their_own_entries() -> None:
    tf = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library"
        " 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or"
        " directory"
    )
    assert "cuda-lib-named-missing" not in failure_ids(tf)
    assert "cuda-lib-named-missing" not in failure_ids(
        "ImportError: libcublas.so.9.0: cannot open shared object file: No such file or directory"
    )


def test_nvidia_docker_plugin_stopping_on_an_error_leaves_containers_without_gpu() -> None:
    # built: the plugin's log prefix and panic ("<argv0> | <date> <time> Error: <err>")
    line = (
        "/usr/bin/nvidia-docker-plugin | 2016/07/21 00:06:05 Error: listen unix"
        " /run/docker/plugins/nvidia-docker.sock: bind: address already in use"
    )
    assert diagnosed_code(line) == 11


@pytest.mark.parametrize(
    "err",
    [
        "nvml: Driver/library version mismatch",
        "Could not load UVM kernel module. Is nvidia-modprobe installed?",
    ],
)
def test_the_plugins_relay_of_a_host_driver_error_is_read_as_the_host(err: str) -> None:
    line = f"nvidia-docker-plugin | 2017/04/03 15:24:24 Error: {err}"
    assert "nvidia-docker-plugin-not-running" not in failure_ids(line)
    assert diagnosed_code(line) == 10


@pytest.mark.parametrize(
    "line",
    [
        "./build/tools/caffe: error while loading shared libraries: libnccl.so.2: cannot open shared object"
        " file: No such file or directory",
        "libnccl.so.2: cannot open shared object file: No such file or directory",
    ],
)
def test_libnccl_missing_is_a_missing_cuda_library(line: str) -> None:
    assert diagnosed_code(line) == 22


def test_nccls_optional_network_plugin_missing_stays_harmless() -> None:
    line = (
        "host:9621:9621 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so:"
        " cannot open shared object file: No such file or directory"
    )
    assert "nccl-library-not-loadable" not in failure_ids(line)
    assert diagnosed_code(line) == 0


def test_nvidia_docker_1_asking_for_an_old_drivers_volume_is_the_containers_plumbing() -> None:
    # built: the plugin's "no such volume" for the volume named after the driver version it was made under
    line = (
        "docker: Error response from daemon: get nvidia_driver_470.82: no such volume: nvidia_driver_470.82."
    )
    assert diagnosed_code(line) == 11
    assert "nvidia-docker-driver-volume-missing" in failure_ids(line)
    assert "nvidia-docker-driver-volume-missing" not in failure_ids("Error: no such volume: my_data")


def test_tensorflows_dlerror_without_its_head_names_the_missing_library() -> None:
    assert (
        diagnosed_code("dlerror: libcufft.so.10: cannot open shared object file: No such file or directory")
        == 22
    )
    # the whole line stays with its own entry, and cudart alone keeps its CPU-machine reading
    whole = (
        "Could not load dynamic library 'libcublas.so.10'; dlerror: libcublas.so.10: cannot open shared"
        " object file: No such file or directory"
    )
    assert "cuda-lib-named-missing" not in failure_ids(whole)
    cut = "dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory"
    assert "cuda-lib-named-missing" not in failure_ids(cut)


def test_tensorflow_1_0s_dso_loader_names_the_missing_cuda_library() -> None:
    # built: TensorFlow 1.0's dso_loader format for cuFFT; libcupti (tracing only) is not claimed
    assert (
        diagnosed_code(
            "I tensorflow/stream_executor/dso_loader.cc:105] Couldn't open CUDA library libcufft.so.8.0."
        )
        == 22
    )
    cupti = "I tensorflow/stream_executor/dso_loader.cc:105] Couldn't open CUDA library libcupti.so.8.0."
    assert "cuda-lib-named-missing" not in failure_ids(cupti)


def test_cudnns_own_loader_line_is_claimed_once() -> None:
    line = (
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared"
        " object file: No such file or directory"
    )
    assert [f.signature.id for f in diagnose(line).failures] == ["cuda-libs-missing"]
