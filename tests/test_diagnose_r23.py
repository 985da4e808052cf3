"""Round 23: WSL2's limit on pinned host memory, and the other readings of an entry whose code no context
changes.

Real lines copied from public threads are in tests/fixtures/logs/real_lines.yaml (wsl-pinned-memory-limit);
the lines below are copied from the threads named beside them.
"""

from __future__ import annotations

import pytest

from conftest import WSL_UNAME as WSL, excerpt_line, excerpt_log
from tfdist_validate.diagnose import diagnose

# saharmor/dalle-playground#88 (Docker Desktop on WSL2; the thread's title and first sentence say so)
TF_PINNED = (
    "dalle-backend    | 2022-06-19 16:51:07.064468: E external/org_tensorflow/tensorflow/stream_executor/"
    "cuda/cuda_driver.cc:802] failed to alloc 1073741824 bytes on host: "
    "CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
    "dalle-backend    | 2022-06-19 16:51:07.064509: W external/org_tensorflow/tensorflow/core/common_runtime/"
    "device/device_host_allocator.h:46] could not allocate pinned host memory of size: 1073741824"
)
# openai/gpt-2#213: the same retries on native Windows, where "the model runs in the end"
WINDOWS_PINNED = (
    "2019-11-19 17:13:26.913409: W .\\tensorflow/core/common_runtime/gpu/gpu_host_allocator.h:44] could not "
    "allocate pinned host memory of size: 4294967296"
)
# ggml-org/llama.cpp#1230 / #1233 (WSL2): ggml's warning, then the out-of-memory it ends in
GGML_PINNED = (
    "WARNING: failed to allocate 1024.00 MB of pinned memory: out of memory\n"
    "CUDA error 2 at ggml-cuda.cu:359: out of memory"
)


def _ids(text: str) -> list[str]:
    return [f.signature.id for f in diagnose(text).failures]


def test_refused_pinned_memory_under_wsl2_is_the_passthrough_limit_before_the_out_of_memory() -> None:
    result = diagnose(f"{WSL}\n{GGML_PINNED}")
    assert int(result.code) == 12
    assert result.failures[0].signature.id == "wsl-pinned-memory-limit"
    assert "gpu-out-of-memory" in _ids(f"{WSL}\n{GGML_PINNED}")
    assert int(diagnose(f"{WSL}\n{TF_PINNED}").code) == 12


def test_refused_pinned_memory_on_a_host_that_is_not_wsl_is_not_read_as_wsl2() -> None:
    assert "wsl-pinned-memory-limit" not in _ids(TF_PINNED)
    assert int(diagnose(TF_PINNED).code) == 41
    assert int(diagnose(GGML_PINNED).code) == 41
    assert "wsl-pinned-memory-limit" not in _ids(WINDOWS_PINNED)


def test_the_wsl2_reading_names_the_out_of_memory_alternative() -> None:
    finding = diagnose(f"{WSL}\n{TF_PINNED}").failures[0]
    assert "(41)" in finding.alternatives


def test_an_entry_whose_code_no_context_changes_always_shows_its_other_readings() -> None:
    # NGC's start-up banner (nvidia_entrypoint.sh), wrapped as ultralytics/yolov5#1232 quotes it: the entry's
    # 'or:' says that programs under minor-version compatibility may still run
    banner = (
        "ERROR: This container was built for NVIDIA Driver Release 455.23 or later, but\n"
        "version 450.66 was detected and compatibility mode is UNAVAILABLE."
    )
    finding = diagnose(banner).failures[0]
    assert finding.signature.id == "ngc-image-needs-newer-driver"
    assert "minor-version compatibility" in finding.alternatives


# NVIDIA/nvidia-docker#1256 (caffe's check of cudaGetDeviceCount), NVIDIA/libnvidia-container#131 (804), and a
# container's command line from tensorflow/build#59 (real_lines.yaml): real lines of different
# threads put together, to show what the container changes
MISMATCH_803 = (
    "CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has unsupported display driver / cuda driver "
    "combination"
)
COMPAT_804 = "cudaGetDeviceCount() call failed with error 804"
IN_A_CONTAINER = (
    '$ docker run --gpus=all --rm -it tensorflow/build:latest-python3.9 bash -c "ldconfig && nvidia-smi"'
)


def test_803_in_a_container_is_the_libcuda_the_image_carries() -> None:
    finding = diagnose(f"{IN_A_CONTAINER}\n{MISMATCH_803}").failures[0]
    assert (finding.signature.id, int(finding.code or 0)) == ("cuda-driver-mismatch-803", 11)
    assert "upgrade the host driver" in finding.signature.fix


def test_803_without_a_container_stays_a_driver_that_does_not_fit_and_names_the_container() -> None:
    finding = diagnose(MISMATCH_803).failures[0]
    assert int(finding.code or 0) == 13
    assert "(11)" in finding.alternatives


def test_804_stays_a_driver_too_old_for_the_image_even_in_a_container() -> None:
    # forward compatibility refused on this GPU: only a host driver that supports the image's CUDA helps
    finding = diagnose(f"{IN_A_CONTAINER}\n{COMPAT_804}").failures[0]
    assert (finding.signature.id, int(finding.code or 0)) == ("cuda-forward-compat-unsupported-804", 13)


# the collective calls as a traceback or the user's code shows them: a frame of AI-Hypercomputer/xpk#965
# (held15), and the strategy as TensorFlow's distributed-training guide creates it
COLLECTIVE_CALLS = [
    "      torch.distributed.broadcast(seed_tensor, src=0)",
    "mirrored_strategy = tf.distribute.MirroredStrategy()",
    "strategy = tf.distribute.MultiWorkerMirroredStrategy()",
]


@pytest.mark.parametrize("line", COLLECTIVE_CALLS)
def test_a_collective_call_shows_gpus_being_joined_for_collectives(line: str) -> None:
    assert "collective" in diagnose(line).evidence


def test_no_space_left_where_a_collective_runs_is_shared_memory_but_not_elsewhere() -> None:
    """xpk#965 (held15): the traceback stops at the broadcast and the user says that "No space left on
    device" came from a missing shared memory mount; the same words in a log without collectives name a full
    disk as much as /dev/shm, so the layer words leave them alone."""
    excerpt = "collective-xpk-torchtitan-rdma-pod-without-dev-shm-mount-broadcast-no-space-left-on-device-965"
    log = excerpt_log(excerpt)
    result = diagnose(log)
    assert (int(result.code), result.failures[0].signature.id) == (40, "words-shared-memory-for-collectives")
    elsewhere = diagnose(log.replace("torch.distributed.broadcast", "torch.broadcast"))
    # the layer words leave it alone; the resemblance model learnt from this thread: its lead is marked
    assert all(
        f.signature.id != "words-shared-memory-for-collectives" and f.inferred for f in elsewhere.failures
    )


def test_a_singularity_image_and_a_pyxis_job_show_a_container() -> None:
    """held18, read after it was scored: DeepVariant run from a Singularity image (google/deepvariant#619)
    and a Slurm job started in an enroot container by pyxis (NVIDIA/pyxis#103)."""
    singularity = excerpt_line(
        "container-deepvariant-gpu-singularity-cuinit-cuda-error-unknown-nvidia-uvm-not-loaded-nvidia-modprobe-619",
        "singularity image",
    )
    pyxis = excerpt_line(
        "container-pyxis-slurm-cuda-container-optix-library-not-found-driver-capabilities-graphics-103",
        "--container-name",
    )
    for line in (singularity, pyxis):
        assert "container" in diagnose(line).evidence, line
    # srun without a container flag starts the job on the host
    assert "container" not in diagnose("srun -p gpu --gpus=1 --pty zsh").evidence


def test_optix_library_not_found_in_a_pyxis_container_is_the_container() -> None:
    excerpt = "container-pyxis-slurm-cuda-container-optix-library-not-found-driver-capabilities-graphics-103"
    result = diagnose(excerpt_log(excerpt))
    assert (int(result.code), result.failures[0].signature.id) == (11, "optix-library-missing")


def test_a_typed_quote_around_the_type_initializer_hides_nothing() -> None:
    """SciSharp/TensorFlow.NET#255 (held18) typed the .NET message with a double quote closing it."""
    excerpt = (
        "other-tensorflow-net-helloworld-type-initializer-dllnotfoundexception-ml-tensorflow-redist-fixed-255"
    )
    result = diagnose(excerpt_log(excerpt))
    assert (int(result.code), result.failures[0].signature.id) == (20, "tf-native-library-not-found")


def test_an_empty_cublas_placeholder_on_jetson_is_the_image_too() -> None:
    """dusty-nv/jetson-inference#1290 (held18): the linker's message with two spaces and no colon, for a
    library the runtime mounts from the host on Jetson."""
    line = excerpt_line(
        "container-jetson-inference-docker-build-empty-libcublas-stub-nvidia-runtime-not-default-during-build-1290",
        "file not recognized",
    )
    finding = diagnose(line).failures[0]
    assert (finding.signature.id, int(finding.code or 0)) == ("container-driver-library-placeholder", 11)


def test_an_insufficient_driver_names_no_driver_and_a_container_as_its_other_readings() -> None:
    """held19's three machines without an NVIDIA GPU (BVLC/caffe#2832 on a Mac, Meshroom#624 on Windows 7,
    fake-gpu-operator#125) print what a too old driver prints: the reading stays 13 and names 10 and 11."""
    line = excerpt_line("no-driver-caffe-macos-runtest-error-35-machine-has-amd-gpu-only-2832", "(35 vs. 0)")
    finding = diagnose(line).failures[0]
    assert int(finding.code or 0) == 13
    assert "(10)" in finding.alternatives and "(11)" in finding.alternatives
