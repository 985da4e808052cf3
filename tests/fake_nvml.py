"""The NVML stand-in: the pynvml functions `probes.nvml` calls, answering from real recorded nvidia-smi
outputs (tests/fixtures/real/, SOURCES.md there), and the named NVML scenarios built from them. It is handed
to `tfdist_validate.probes.nvml.collect(lib=...)`; pynvml itself is not patched, and its real exception
classes are what the stand-in raises. tests/hosts.py re-exports every name here.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pynvml

from tfdist_validate.probes import nvml as nvml_probe

MIB = 1024 * 1024


_COMPUTE_MODES = {"Default": 0, "Exclusive_Thread": 1, "Prohibited": 2, "Exclusive_Process": 3}
_NA = {"[N/A]", "N/A", "[Not Supported]", "[Requested functionality has been deprecated]", ""}


def _nvml_error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)  # pynvml picks the real subclass, e.g. NVMLError_GpuIsLost


class FakeNvml:
    """The pynvml functions `probes.nvml` calls, answering from recorded nvidia-smi fields."""

    NVMLError = pynvml.NVMLError

    def __init__(
        self,
        driver: str = "",
        cuda: int = 0,
        devices: Sequence[Mapping[str, str] | int] = (),
        init_error: int | None = None,
        old_driver: bool = False,
        no_v3_processes: bool = False,
        v3_layout_break: bool = False,
        topology: Sequence[Sequence[str]] = (),
    ) -> None:
        self.driver = driver
        self.cuda = cuda
        self.devices = list(devices)  # an int is the NVML error that device's handle raises
        self.init_error = init_error
        self.old_driver = old_driver  # no nvmlDeviceGetCurrentClocksEventReasons (added in NVML 12.2)
        # a driver without nvmlDeviceGetComputeRunningProcesses_v3: pynvml's own wrapper turns the missing
        # function into NVMLLibraryMismatchError (a plain Exception); _v2 answers
        self.no_v3_processes = no_v3_processes
        # drivers 535.43-535.86: _v3 writes 32-byte v3 entries that pynvml reads as 24-byte v2 ones
        self.v3_layout_break = v3_layout_break
        self.calls: list[str] = []
        # the GPU cells of a real `nvidia-smi topo -m` (recorded_outputs.topo_matrix); (): NOT_SUPPORTED
        self.topology = [list(row) for row in topology]
        # (a, b) -> NVML_P2P_STATUS_* for read and write: a change to the capture, which shows no P2P status
        self.p2p_refused: dict[tuple[int, int], int] = {}

    def _field(self, handle: int, name: str) -> str:
        device = self.devices[handle]
        assert not isinstance(device, int)
        value = device.get(name, "[N/A]")
        if value in _NA:
            raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise _nvml_error(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        device = self.devices[index]
        if isinstance(device, int):
            raise _nvml_error(device)
        return index

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._field(h, "name")

    def nvmlDeviceGetUUID(self, h: int | tuple[int, int]) -> str:
        if isinstance(h, tuple):  # a MIG device handle (parent, slot)
            return self._mig_uuids(h[0])[h[1]]
        return self._field(h, "uuid")

    def _mig_uuids(self, h: int) -> list[str]:
        device = self.devices[h]
        assert not isinstance(device, int)
        return list(json.loads(device.get("mig_devices", "[]")))

    def nvmlDeviceGetMaxMigDeviceCount(self, h: int) -> int:
        return 7 if self._enabled(h, "mig.mode.current") else 0  # A100 / H100: up to seven MIG devices

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, slot: int) -> tuple[int, int]:
        if slot >= len(self._mig_uuids(h)):
            raise _nvml_error(pynvml.NVML_ERROR_NOT_FOUND)
        return (h, slot)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        total, used = float(self._field(h, "memory.total")), float(self._field(h, "memory.used"))
        return SimpleNamespace(total=int(total * MIB), used=int(used * MIB), free=int((total - used) * MIB))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        major, minor = self._field(h, "compute_cap").split(".")
        return int(major), int(minor)

    def _enabled(self, h: int, name: str) -> int:
        return 1 if self._field(h, name) in ("Enabled", "Yes", "On") else 0

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        mode = self._enabled(h, "mig.mode.current")
        return [mode, mode]

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        return self._enabled(h, "persistence_mode")

    def nvmlDeviceGetEccMode(self, h: int) -> list[int]:
        mode = self._enabled(h, "ecc.mode.current")
        return [mode, mode]

    def nvmlDeviceGetComputeMode(self, h: int) -> int:
        return _COMPUTE_MODES[self._field(h, "compute_mode")]

    def nvmlDeviceGetTotalEccErrors(self, h: int, error_type: int, counter_type: int) -> int:
        kind = "corrected" if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else "uncorrected"
        scope = "volatile" if counter_type == pynvml.NVML_VOLATILE_ECC else "aggregate"
        return int(self._field(h, f"ecc.errors.{kind}.{scope}.total"))

    def nvmlDeviceGetRetiredPages(self, h: int, cause: int) -> list[int]:
        name = "single_bit_ecc" if cause == 0 else "double_bit"
        return list(range(int(self._field(h, f"retired_pages.{name}.count"))))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: int) -> int:
        return self._enabled(h, "retired_pages.pending")

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple[int, int, int, int]:
        return (
            int(self._field(h, "remapped_rows.correctable")),
            int(self._field(h, "remapped_rows.uncorrectable")),
            self._enabled(h, "remapped_rows.pending"),
            self._enabled(h, "remapped_rows.failure"),
        )

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        if self.no_v3_processes:
            return pynvml.throwOnVersionMismatch(self._function_not_found)(h)  # type: ignore[no-any-return]
        if self.v3_layout_break:
            return _misread_as_v2(self._processes(h))
        return self._processes(h)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, h: int) -> list[SimpleNamespace]:
        return self._processes(h)

    @staticmethod
    def _function_not_found(_h: int) -> list[SimpleNamespace]:
        raise _nvml_error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    def _processes(self, h: int) -> list[SimpleNamespace]:
        device = self.devices[h]
        assert not isinstance(device, int)
        found = json.loads(device.get("processes", "[]"))
        return [
            SimpleNamespace(pid=p["pid"], usedGpuMemory=int(float(p["used_memory"]) * MIB)) for p in found
        ]

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self._field(h, "pci.bus_id"))

    c_nvmlGpuFabricInfoV_t = pynvml.c_nvmlGpuFabricInfoV_t
    c_nvmlGpuFabricInfo_t = pynvml.c_nvmlGpuFabricInfo_t

    def nvmlDeviceGetGpuFabricInfoV(self, h: int, info: Any) -> int:
        """Fills the struct from nvidia-smi's `fabric.state` / `fabric.status` (the --query-gpu names);
        GPUs without them (before Hopper) answer NOT_SUPPORTED, as NVML does."""
        state = self._field(h, "fabric.state")
        status = self.devices[h].get("fabric.status", "[N/A]")  # type: ignore[union-attr]
        target = info._obj  # ctypes.byref's referent
        target.state = {v: k for k, v in nvml_probe.FABRIC_STATES.items()}[state]
        target.status = 0 if status in ("Success", "[N/A]") else pynvml.NVML_ERROR_UNKNOWN
        return 0

    nvmlDeviceGetGpuFabricInfo = nvmlDeviceGetGpuFabricInfoV

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        """From a `nvidia-smi nvlink -s` capture's lines (the `nvlink` field): a speed is an active link,
        `<inactive>` a down one; a GPU without the field has no NVLink (NOT_SUPPORTED), and a link past the
        product's last is INVALID_ARGUMENT, as nvml.h documents."""
        links = json.loads(self._field(h, "nvlink"))
        if link >= len(links):
            raise _nvml_error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 0 if links[link] == "<inactive>" else 1

    def nvmlDeviceGetNvLinkErrorCounter(self, h: int, link: int, counter: int) -> int:
        """From the `nvlink.errors` field ({link: {replay, recovery, crc_flit, crc_data}}, the counters of
        `nvidia-smi nvlink -e`); NOT_SUPPORTED without it, as Hopper's drivers answer."""
        counts = json.loads(self._field(h, "nvlink.errors"))
        names = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}
        return int(counts.get(str(link), {}).get(names[counter], 0))

    def _cell(self, a: int, b: int) -> str:
        if not self.topology:
            raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return self.topology[a][b]

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:
        """topo -m's word as nvmlGpuTopologyLevel_t; an `NV#` cell hides the PCIe path, which no capture
        gives, so it answers NOT_SUPPORTED (a limit of this stand-in, not NVML's answer)."""
        levels = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
        cell = self._cell(a, b)
        if cell not in levels:
            raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return levels[cell]

    def nvmlDeviceGetP2PStatus(self, a: int, b: int, index: int) -> int:
        nvlink = self._cell(a, b).startswith("NV")
        if index == pynvml.NVML_P2P_CAPS_INDEX_NVLINK:
            return pynvml.NVML_P2P_STATUS_OK if nvlink else pynvml.NVML_P2P_STATUS_NOT_SUPPORTED
        return self.p2p_refused.get((a, b), pynvml.NVML_P2P_STATUS_OK)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        if self.old_driver:
            raise _nvml_error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        return int(self._field(h, "clocks_event_reasons.active"), 16)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:
        device = self.devices[h]
        assert not isinstance(device, int)
        value = device.get("clocks_throttle_reasons.active") or device.get("clocks_event_reasons.active")
        if not value or value in _NA:
            raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(value, 16)


class _ProcessInfoV3(ctypes.Structure):
    """nvmlProcessInfo_v3_t as drivers 535.43-535.86 write it (XuehaiPan/nvitop#79 quotes the struct)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    ]


def _misread_as_v2(procs: list[SimpleNamespace]) -> list[SimpleNamespace]:
    """What pynvml returns there: the driver's v3 array read with pynvml's own v2 struct, byte for byte."""
    written = (_ProcessInfoV3 * len(procs))(
        *(_ProcessInfoV3(p.pid, p.usedGpuMemory, 0xFFFFFFFF, 0xFFFFFFFF, 0) for p in procs)
    )
    read = (pynvml.c_nvmlProcessInfo_v2_t * len(procs)).from_buffer(written)
    return [SimpleNamespace(pid=e.pid, usedGpuMemory=e.usedGpuMemory) for e in read]
