"""What the health layer says about how the GPUs a run uses talk to each other: NVML's peer-to-peer status
per pair, the path (NVLink, a PCIe switch, the CPU), the IOMMU's mode and ACS. Warnings only: the run may
still work, at less than the bandwidth the product has (NCCL falls back to copies through host memory)."""

from __future__ import annotations

from typing import Any

from tfdist_validate.host import iommu
from tfdist_validate.host.gpus import NA, Gpu, GpuPair
from tfdist_validate.host.runtime import RuntimeFacts


def view(
    pairs: tuple[GpuPair, ...], used: list[Gpu], facts: RuntimeFacts | None
) -> tuple[list[str], list[str], dict[str, Any]]:
    """(warnings, hints, details) for the pairs of the GPUs in `used`; nothing for a one-GPU run."""
    if len(used) < 2:
        return [], [], {}
    indexes = {g.index for g in used}
    mine = [p for p in pairs if p.a in indexes and p.b in indexes]
    found: list[str] = []
    hints: list[str] = []
    info: dict[str, Any] = {}
    if mine:
        info["gpu_pairs"] = {
            f"GPU {p.a}-{p.b}": {"p2p_read": p.p2p_read, "p2p_write": p.p2p_write, "path": p.path}
            for p in mine
        }
    refused = [p for p in mine if {p.p2p_read, p.p2p_write} - {"OK", NA}]
    if refused:
        shown = ", ".join(f"GPU {p.a}-{p.b} ({p.p2p_read} / {p.p2p_write})" for p in refused)
        found.append(f"no peer-to-peer read / write between {shown}: collectives go through host memory")
        hints.append(
            "`nvidia-smi topo -p2p r` (and `w`) shows the same; on a server, check the IOMMU (`iommu=pt`)"
            " and ACS on the PCIe switches"
        )
    if facts is not None and facts.kernel_iommu is not None:
        mode = iommu.mode(facts.kernel_iommu)
        info["iommu"] = {"kernel_params": list(facts.kernel_iommu), "mode": mode}
        if mode == "translated":
            found.append(
                f"IOMMU in translated mode ({' '.join(facts.kernel_iommu)}): GPU peer-to-peer DMA is"
                " remapped, and NCCL can hang in the first all-reduce or crawl"
            )
            hints.append("add `iommu=pt` to the kernel command line (GRUB_CMDLINE_LINUX) and reboot")
    if mine or "iommu" in info:
        info["acs"] = iommu.ACS_NOT_SHOWN
    return found, hints, info
