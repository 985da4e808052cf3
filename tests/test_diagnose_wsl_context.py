"""What decides a WSL reading: the Windows build under WSL (windows-build-without-wsl-gpu) and a missing PCI
bus (wsl1-no-pci-bus). Lines are copied from the public threads named beside them."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# microsoft/WSL#5644
OLD_BUILD = "Windows build number: Microsoft Windows [Version 10.0.19041.388]"
# microsoft/WSL#9821: Windows 11 with WSL 2, where the GPU does reach WSL
NEW_BUILD = "Microsoft Windows [Version 10.0.22621.1413]"
WSL2_KERNEL = "Linux version 5.15.90.1-microsoft-standard-WSL2"
# microsoft/WSL#4519
NO_PCI = "pcilib: Cannot open /proc/bus/pci lspci: Cannot find any working access method."


def _ids(log: str) -> list[str]:
    return [f.signature.id for f in diagnose(log).findings]


def test_a_windows_build_before_21h2_under_wsl_has_no_gpu() -> None:
    result = diagnose(WSL2_KERNEL + "\n" + OLD_BUILD)
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert "windows-build-without-wsl-gpu" in _ids(WSL2_KERNEL + "\n" + OLD_BUILD)


def test_the_windows_build_alone_is_native_windows_and_says_nothing_about_wsl() -> None:
    assert "windows-build-without-wsl-gpu" not in _ids(OLD_BUILD)


def test_a_windows_build_with_wsl_gpu_support_is_not_a_cause() -> None:
    assert "windows-build-without-wsl-gpu" not in _ids(WSL2_KERNEL + "\n" + NEW_BUILD)


def test_no_pci_bus_is_wsl_1_and_names_the_container_alternative() -> None:
    result = diagnose(NO_PCI)
    assert result.code == ExitCode.WSL2_PASSTHROUGH
    assert "(11)" in result.findings[0].alternatives


def test_no_pci_bus_inside_a_container_is_a_container_without_the_gpu() -> None:
    # a container-id prompt (warmshao/FasterLivePortrait#37)
    prompt = "(base) root@a2d7b9b1e3ab:~/FasterLivePortrait# lspci"
    assert diagnose(prompt + "\n" + NO_PCI).code == ExitCode.CONTAINER_NO_GPU
