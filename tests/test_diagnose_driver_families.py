"""Driver-level families that share words but not causes: a GPU left to a legacy driver branch (23) against a
kernel-module flavour that does not drive the GPU (10), and what the newer-driver signatures must not take.
Every log here is real lines of one public thread (the source named beside it)."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose


def _failure_ids(log: str) -> list[str]:
    return [finding.signature.id for finding in diagnose(log).failures]


# https://github.com/NixOS/nixos-hardware/issues/1880: the 595 driver leaves a GTX 10xx to the 580 branch
LEGACY = """\
NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please
NVRM:  information.  The 595.71.05 NVIDIA driver will ignore
[Sun May 17 15:55:50 2026] NVRM: No NVIDIA GPU found."""


def test_a_gpu_left_to_a_legacy_branch_is_an_unsupported_gpu_not_a_missing_driver() -> None:
    result = diagnose(LEGACY)
    assert int(result.code) == 23
    # "No NVIDIA GPU found" is only the consequence: it must not outrank the cause with its lower layer (10)
    assert "nvidia-driver-drops-gpu" not in _failure_ids(LEGACY)
    assert "legacy" in result.failures[0].signature.title


def test_no_gpu_found_alone_is_still_a_driver_that_drives_nothing() -> None:
    assert int(diagnose(LEGACY.splitlines()[-1]).code) == 10


# https://github.com/NVIDIA/open-gpu-kernel-modules/issues/696: the open module refusing a Pascal GPU (no GSP)
OPEN_MODULE = """\
NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:1b82)
NVRM: installed in this system is not supported by open
NVRM: nvidia.ko because it does not include the required GPU
NVRM: System Processor (GSP)."""


def test_the_open_module_refusing_a_gpu_without_gsp_is_the_wrong_module_flavour() -> None:
    result = diagnose(OPEN_MODULE)
    assert int(result.code) == 10
    assert _failure_ids(OPEN_MODULE) == ["nvidia-driver-drops-gpu"]
    assert "proprietary" in result.failures[0].signature.fix


def test_an_undefined_nvml_symbol_is_not_a_missing_driver_api_function() -> None:
    # https://github.com/apache/mxnet/issues/19917: the pattern is for cuXxx driver-API names only
    line = (
        "[2021-02-18T20:46:02.547Z] E   OSError: /work/mxnet/python/mxnet/../../lib/libmxnet.so: "
        "undefined symbol: nvmlDeviceGetComputeRunningProcesses_v2"
    )
    assert "libcuda-missing-symbol" not in _failure_ids(line)


def test_the_ngc_banner_counts_by_the_driver_version_it_found() -> None:
    # https://github.com/NVIDIA/nvidia-docker/issues/1479: the banner's first line names what the image wants;
    # the second, with the version found, is what says the host's driver is older
    first = "ERROR: This container was built for NVIDIA Driver Release 450.51 or later, but"
    assert "ngc-image-needs-newer-driver" not in _failure_ids(first)
    both = first + "\n       version 440.33.01 was detected and compatibility mode is UNAVAILABLE."
    assert _failure_ids(both)[0] == "ngc-image-needs-newer-driver"
    assert int(diagnose(both).code) == 13
