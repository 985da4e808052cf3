"""The IOMMU's mode as the kernel command line (/proc/cmdline under --root) sets it.

An IOMMU in translated mode remaps every peer-to-peer DMA between GPUs: NCCL's all-reduce then hangs or
crawls, and the kernel logs DMAR faults (NVIDIA's NCCL troubleshooting guide, "PCI Access Control Services
(ACS)" and IOMMU; fixed with `iommu=pt`). Parameters from the kernel's admin-guide kernel-parameters.txt.
A container sees its host's command line: /proc/cmdline is not namespaced.
"""

from __future__ import annotations

# the parameters that set the IOMMU's mode, and those that set PCI ACS (Linux 6.11+ `config_acs`)
_PARAMS = ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict")
_ACS = ("acs",)

# where /sys does not show ACS (the bridges' ACS control register is in PCI config space, past the first
# 64 bytes that a non-root reader gets): the one line the report says about it
ACS_NOT_SHOWN = (
    "ACS is not shown by /sys (it is in the PCI bridges' config space): check it as root with"
    " `sudo lspci -vvv | grep -i acsctl` (SrcValid+ means ACS redirects peer-to-peer traffic through the CPU)"
)


def kernel_params(cmdline: str) -> tuple[str, ...]:
    """The IOMMU and ACS parameters of a kernel command line, as written."""
    return tuple(
        word
        for word in cmdline.split()
        if word.partition("=")[0] in _PARAMS or any(a in word.lower() for a in _ACS)
    )


def mode(params: tuple[str, ...]) -> str:
    """passthrough | translated | off | not set (the kernel's and firmware's default)."""
    values: dict[str, list[str]] = {}
    for word in params:
        name, _, value = word.partition("=")
        values.setdefault(name, []).extend(value.lower().split(","))
    if "pt" in values.get("iommu", []) or "1" in values.get("iommu.passthrough", []):
        return "passthrough"
    if "off" in values.get("intel_iommu", []) + values.get("amd_iommu", []) + values.get("iommu", []):
        return "off"
    translated = (
        "on" in values.get("intel_iommu", [])
        or {"on", "force_isolation"} & set(values.get("amd_iommu", []))
        or {"force", "nopt"} & set(values.get("iommu", []))
        or "0" in values.get("iommu.passthrough", [])
    )
    return "translated" if translated else "not set"
