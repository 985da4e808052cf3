"""An empty NVIDIA library in a container started without the NVIDIA runtime (driver-lib-empty-placeholder):
only the libraries that runtime mounts are read so. Every line is copied from the public thread named."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode


def test_an_empty_libcuda_is_a_container_without_the_gpu() -> None:
    # Ceruleanacg/Personae#14
    result = diagnose("ImportError: /usr/lib/x86_64-linux-gnu/libcuda.so.1: file too short")
    assert result.code == ExitCode.CONTAINER_NO_GPU
    assert "(10)" in result.findings[0].alternatives


def test_an_empty_library_the_nvidia_runtime_does_not_mount_is_not_read_as_one() -> None:
    # ggml-org/llama.cpp#14813: a broken image layer, not a missing GPU
    line = (
        "/app/llama-server: error while loading shared libraries: /lib/x86_64-linux-gnu/libcurl.so.4:"
        " file too short"
    )
    assert diagnose(line).code == ExitCode.OK
