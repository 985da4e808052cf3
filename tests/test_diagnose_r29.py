"""Round 29, read from held25 after it was scored: COLMAP's check that CUDA counted a device, and
nvidia-docker 1.0's plugin failing to build the driver volume. Real lines from threads outside every
evaluation set."""

from __future__ import annotations

from conftest import diagnosed_code, failure_ids
from tfdist_validate.exitcodes import ExitCode


def test_colmaps_count_of_no_cuda_device_is_no_gpu_for_cuda() -> None:
    # colmap/colmap#974
    line = "F0909 17:59:05.800850   743 extraction.cc:132] Check failed: num_cuda_devices > 0 (0 vs. 0) "
    assert diagnosed_code(line) == ExitCode.NO_DRIVER


def test_nvidia_docker_1_failing_to_build_the_driver_volume_starts_no_gpu_container() -> None:
    # NVIDIA/nvidia-docker#188
    line = (
        "docker: Error response from daemon: create nvidia_driver_364.19: VolumeDriver.Create: internal"
        " error, check logs for details."
    )
    assert failure_ids(line) == {"nvidia-docker-driver-volume-create-failed"}
    assert diagnosed_code(line) == ExitCode.CONTAINER_NO_GPU
