"""The driver's view of the GPUs, whichever probe produced it (NVML first, nvidia-smi as a fallback).

A value a driver generation does not support is NA ("n/a"), never an exception (STYLE.md: gpustat keeps a lost
GPU as data). `to_json` gives the report's `host.driver` / `host.gpus` blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NA = "n/a"

Count = int | str  # a number, or NA


@dataclass(frozen=True)
class ProbeError:
    """Why a probe could not answer: pynvml's exception class and text, or nvidia-smi's message."""

    kind: str  # library_not_found | driver_not_loaded | no_permission | unknown | version_mismatch | ...
    message: str
    source: str  # "nvml" or "nvidia-smi"
    nvml_class: str | None = None
    nvml_code: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "source": self.source,
            "nvml_class": self.nvml_class,
            "nvml_code": self.nvml_code,
        }


@dataclass(frozen=True)
class Process:
    pid: int
    used_memory_mib: float | None  # None: not reported (WDDM, MIG without privileges)


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str | None = None
    uuid: str | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    compute_capability: str | None = None  # "9.0"
    mig_mode: str = NA  # "Enabled" | "Disabled" | NA
    persistence_mode: str = NA
    compute_mode: str = NA  # "Default" | "Exclusive_Process" | "Prohibited" | NA
    ecc_mode: str = NA
    ecc_errors: dict[str, Count] = field(default_factory=dict)  # volatile/aggregate x corrected/uncorrected
    retired_pages: dict[str, Count] = field(default_factory=dict)  # single_bit, double_bit, pending
    remapped_rows: dict[str, Count] = field(
        default_factory=dict
    )  # correctable, uncorrectable, pending, failure
    processes: tuple[Process, ...] | None = None  # None: not reported
    clock_event_reasons: tuple[str, ...] | None = None  # active reasons; None: not reported
    error: str | None = None  # the GPU answered with an error (e.g. "GPU is lost"): data, not a crash
    # NVML calls that raised something other than an NVML error, by function: their value is n/a. pynvml
    # raises NVMLLibraryMismatchError (a plain Exception) where the driver lacks a versioned function.
    query_errors: dict[str, str] = field(default_factory=dict)
    # MIG mode: the UUIDs of its MIG devices (what CUDA_VISIBLE_DEVICES takes), in NVML's order
    mig_devices: tuple[str, ...] = ()
    # the NVLink fabric's registration of this GPU, in nvidia-smi's words (`nvidia-smi -q`, "Fabric"):
    # state Not Supported | Not Started | In Progress | Completed, status Success or the NVML error that
    # ended it; NA where the driver or the GPU generation has no fabric query (before Hopper)
    fabric_state: str = NA
    fabric_status: str = NA
    pci_bus_id: str | None = None  # NVML's "00000000:8D:00.0"; None where not reported
    # each NVLink link's state in link order, "active" | "inactive" (`nvidia-smi nvlink -s`: a speed or
    # <inactive>); None: the GPU has no NVLink, or the driver did not say
    nvlink_links: tuple[str, ...] | None = None
    # link number -> replay / recovery / crc_flit / crc_data -> count since the driver loaded (`nvidia-smi
    # nvlink -e`), for the active links whose counters NVML reports (Hopper's drivers report none here)
    nvlink_errors: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def cc_tuple(self) -> tuple[int, int] | None:
        if not self.compute_capability:
            return None
        major, _, minor = self.compute_capability.partition(".")
        try:
            return int(major), int(minor or 0)
        except ValueError:
            return None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "memory_total_mib": self.memory_total_mib,
            "memory_used_mib": self.memory_used_mib,
            "compute_capability": self.compute_capability,
            "mig_mode": self.mig_mode,
            "persistence_mode": self.persistence_mode,
            "compute_mode": self.compute_mode,
            "ecc_mode": self.ecc_mode,
            "ecc_errors": dict(self.ecc_errors),
            "retired_pages": dict(self.retired_pages),
            "remapped_rows": dict(self.remapped_rows),
            "processes": (
                None
                if self.processes is None
                else [{"pid": p.pid, "used_memory_mib": p.used_memory_mib} for p in self.processes]
            ),
            "clock_event_reasons": None
            if self.clock_event_reasons is None
            else list(self.clock_event_reasons),
            "error": self.error,
            "mig_devices": list(self.mig_devices),
            "fabric_state": self.fabric_state,
            "fabric_status": self.fabric_status,
            "pci_bus_id": self.pci_bus_id,
            "nvlink_links": None if self.nvlink_links is None else list(self.nvlink_links),
            "nvlink_errors": {link: dict(c) for link, c in self.nvlink_errors.items()},
            "query_errors": dict(self.query_errors),
        }


# how two GPUs reach each other, from `nvidia-smi topo -m`'s word for their closest common PCIe ancestor
PATHS = {
    "PIX": "one PCIe switch",
    "PXB": "PCIe switches",
    "PHB": "the CPU (a PCIe host bridge)",
    "NODE": "the CPU (host bridges of one NUMA node)",
    "SYS": "the CPUs' interconnect (across NUMA nodes)",
}


@dataclass(frozen=True)
class GpuPair:
    """Two GPUs (NVML indexes a < b): NVML's peer-to-peer status (`nvidia-smi topo -p2p r` / `w` / `n`: "OK"
    or why not) and their closest common PCIe ancestor (`nvidia-smi topo -m`'s PIX / PXB / PHB / NODE / SYS;
    NA where not reported)."""

    a: int
    b: int
    p2p_read: str = NA
    p2p_write: str = NA
    p2p_nvlink: str = NA
    topology: str = NA
    error: str | None = None  # a GPU of the pair answered with an error (lost): nothing else is known
    query_errors: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        if self.p2p_nvlink == "OK":
            return "NVLink"
        return PATHS.get(self.topology, NA)


@dataclass(frozen=True)
class DriverSnapshot:
    source: str  # "nvml" | "nvidia-smi"
    error: ProbeError | None = None
    driver_version: str | None = None
    cuda_driver_version: int | None = None  # NVML's encoding: 12020 = CUDA 12.2
    gpus: tuple[Gpu, ...] = ()
    pairs: tuple[GpuPair, ...] = ()  # every two GPUs; () where fewer than two, or in older reports

    @property
    def cuda_version(self) -> str | None:
        return cuda_version_text(self.cuda_driver_version)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "version": self.driver_version,
            "cuda_version": self.cuda_version,
            "error": self.error.to_json() if self.error else None,
        }


def cuda_version_text(encoded: int | None) -> str | None:
    """NVML encodes CUDA versions as 1000 * major + 10 * minor."""
    if not encoded:
        return None
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"
