"""The one module that talks to NVML (through pynvml, imported lazily; STYLE.md practice 3).

`collect()` opens one NVML session (nvmlInit ... nvmlShutdown), reads every fact the driver and health layers
need, and returns a plain `DriverSnapshot`; `within()` runs it under a deadline (the one place that does).
Nothing here raises, whatever pynvml raises: a failed init becomes `snapshot.error`, a lost GPU becomes
`gpu.error`, and a query an old driver does not know becomes "n/a" (with what it raised in `gpu.query_errors`
when that was not an NVML error, such as pynvml's NVMLLibraryMismatchError).

`lib` is the pynvml module; tests pass a stand-in object with the same functions and pynvml's own exception
classes, built from recorded nvidia-smi outputs, instead of patching pynvml process-wide.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from collections.abc import Callable
from typing import Any

from tfdist_validate.host.gpus import NA, DriverSnapshot, Gpu, ProbeError, Process
from tfdist_validate.probes import nvlink, p2p

# NVML return codes (nvml.h; stable ABI values, also pynvml.NVML_ERROR_*)
NOT_SUPPORTED = 3
NO_PERMISSION = 4
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18
NO_DATA = 21
UNKNOWN = 999

ERROR_KINDS = {
    LIBRARY_NOT_FOUND: "library_not_found",
    DRIVER_NOT_LOADED: "driver_not_loaded",
    NO_PERMISSION: "no_permission",
    UNKNOWN: "unknown",
    LIB_RM_VERSION_MISMATCH: "version_mismatch",
    GPU_IS_LOST: "gpu_lost",
}
# a query that answers with one of these gets "n/a": the driver or GPU generation does not have it
_ABSENT = frozenset({NOT_SUPPORTED, FUNCTION_NOT_FOUND, NO_PERMISSION, NO_DATA})

_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
# nvmlClocksEventReason* bits; idle and application-clock settings are not problems, so they are not named
CLOCK_EVENT_BITS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
_MIB = 1024 * 1024
_MEMORY_ERROR = {"corrected": 0, "uncorrected": 1}  # nvmlMemoryErrorType_t
_COUNTER = {"volatile": 0, "aggregate": 1}  # nvmlEccCounterType_t

NvmlProbe = Callable[[], DriverSnapshot]


def collect(lib: Any = None) -> DriverSnapshot:
    if lib is None:
        try:
            import pynvml
        except ImportError as err:
            return DriverSnapshot("nvml", ProbeError("binding_missing", f"pynvml: {err}", "nvml"))
        lib = pynvml
    try:
        lib.nvmlInit()
    except Exception as err:  # an NVMLError, or whatever a broken binding raises: a fact, never a crash
        return DriverSnapshot("nvml", _error(err))
    try:
        driver = _text(lib.nvmlSystemGetDriverVersion())
        cuda = _query(lib, "nvmlSystemGetCudaDriverVersion", default=None)
        count = lib.nvmlDeviceGetCount()
        gpus = tuple(_gpu(lib, i, driver) for i in range(count))
        return DriverSnapshot("nvml", None, driver, cuda, gpus, p2p.read(lib, _query, count))
    except Exception as err:
        return DriverSnapshot("nvml", _error(err))
    finally:
        with contextlib.suppress(Exception):  # nothing to release if the session already broke
            lib.nvmlShutdown()


def within(probe: NvmlProbe, timeout_s: float) -> DriverSnapshot | None:
    """Run the NVML probe under a deadline; None if it did not answer in time (a driver call that hangs in C
    cannot be interrupted, only abandoned: the thread is a daemon). A probe that raised is a fact about the
    driver or the binding, never reported as a hang."""
    box: list[DriverSnapshot] = []

    def ask() -> None:
        try:
            box.append(probe())
        except Exception as err:  # pynvml raises plain Exceptions too (NVMLLibraryMismatchError)
            box.append(
                DriverSnapshot("nvml", ProbeError("probe_crashed", f"{type(err).__name__}: {err}", "nvml"))
            )

    worker = threading.Thread(target=ask, daemon=True, name="nvml-probe")
    worker.start()
    worker.join(timeout_s)
    return box[0] if box else None


def _error(err: Any) -> ProbeError:
    code = getattr(err, "value", None)
    return ProbeError(
        ERROR_KINDS.get(code, "nvml_error") if isinstance(code, int) else "nvml_error",
        str(err),
        "nvml",
        nvml_class=type(err).__name__,
        nvml_code=code if isinstance(code, int) else None,
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _query(lib: Any, name: str, *args: Any, default: Any = NA, errors: dict[str, str] | None = None) -> Any:
    """One NVML call; "not supported here" (or a binding too old to have it) is `default`, not an error.

    An NVML error that is not about support (GPU lost) propagates: it is a fact about the GPU. Anything else
    pynvml raises (NVMLLibraryMismatchError, a plain Exception, where the driver lacks the versioned function
    the unversioned name calls) makes only this value unknown; `errors` records what it was."""
    fn = getattr(lib, name, None)
    if fn is None:
        return default
    try:
        return fn(*args)
    except lib.NVMLError as err:
        if getattr(err, "value", None) in _ABSENT:
            return default
        raise
    except Exception as err:
        if errors is not None:
            errors[name] = f"{type(err).__name__}: {err}"
        return default


def _gpu(lib: Any, index: int, driver: str = "") -> Gpu:
    try:
        handle = lib.nvmlDeviceGetHandleByIndex(index)
        return _read_gpu(lib, index, handle, driver)
    except Exception as err:
        # one broken GPU ("GPU is lost", "Unknown Error") is a fact about that GPU, not about the others
        return Gpu(index=index, error=f"{type(err).__name__}: {err}")


Ask = Callable[..., Any]  # _query with lib and the GPU's error record bound


def _read_gpu(lib: Any, index: int, handle: Any, driver: str = "") -> Gpu:
    errors: dict[str, str] = {}
    ask: Ask = functools.partial(_query, lib, errors=errors)
    memory = ask("nvmlDeviceGetMemoryInfo", handle, default=None)
    cc = ask("nvmlDeviceGetCudaComputeCapability", handle, default=None)
    mig = ask("nvmlDeviceGetMigMode", handle, default=None)
    persistence = ask("nvmlDeviceGetPersistenceMode", handle, default=None)
    ecc = ask("nvmlDeviceGetEccMode", handle, default=None)
    mode = ask("nvmlDeviceGetComputeMode", handle, default=None)
    total_mib = None if memory is None else round(memory.total / _MIB, 1)
    pci = ask("nvmlDeviceGetPciInfo", handle, default=None)  # nvidia-smi --query-gpu=pci.bus_id
    links, link_errors = nvlink.read(lib, ask, handle, errors)  # nvidia-smi nvlink -s / nvlink -e
    return Gpu(
        index=index,
        name=_text(lib.nvmlDeviceGetName(handle)),
        uuid=_text(ask("nvmlDeviceGetUUID", handle)),
        memory_total_mib=total_mib,
        memory_used_mib=None if memory is None else round(memory.used / _MIB, 1),
        compute_capability=None if cc is None else f"{cc[0]}.{cc[1]}",
        mig_mode=NA if mig is None else _enabled(mig[0]),
        persistence_mode=NA if persistence is None else _enabled(persistence),
        compute_mode=NA if mode is None else _COMPUTE_MODES.get(mode, f"mode {mode}"),
        ecc_mode=NA if ecc is None else _enabled(ecc[0]),
        ecc_errors={
            f"{counter}_{kind}": ask("nvmlDeviceGetTotalEccErrors", handle, error_type, counter_type)
            for counter, counter_type in _COUNTER.items()
            for kind, error_type in _MEMORY_ERROR.items()
        },
        retired_pages=_retired_pages(ask, handle),
        remapped_rows=_remapped_rows(ask, handle),
        processes=_processes(ask, handle, driver, total_mib, errors),
        clock_event_reasons=_clock_events(ask, handle),
        query_errors=errors,
        mig_devices=_mig_devices(lib, ask, handle) if mig is not None and mig[0] else (),
        pci_bus_id=None if pci is None else _text(pci.busId),
        nvlink_links=links,
        nvlink_errors=link_errors,
        **_fabric(lib, ask, handle),
    )


# nvmlGpuFabricState_t, named as `nvidia-smi -q` prints them under "Fabric"
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
# the versioned call first (drivers 550+); the unversioned one is deprecated but is all that R535 has
_FABRIC_QUERIES = (
    ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
    ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
)


def _fabric(lib: Any, ask: Ask, handle: Any) -> dict[str, str]:
    """The GPU's NVLink fabric registration (`nvidia-smi -q`, Fabric: State / Status). Hopper and newer
    only: older GPUs, drivers and bindings answer "not supported", lack the function or the struct, which
    leaves both NA."""
    for function, struct in _FABRIC_QUERIES:
        cls = getattr(lib, struct, None)
        if cls is None or getattr(lib, function, None) is None:
            continue
        info = cls()
        if ask(function, handle, ctypes.byref(info), default=None) is None:
            continue
        state = FABRIC_STATES.get(int(info.state), f"state {int(info.state)}")
        # nvml.h: status "must be checked only if state returns complete"
        status = int(info.status) if state == "Completed" else None
        return {
            "fabric_state": state,
            "fabric_status": NA if status is None else "Success" if status == 0 else f"NVML error {status}",
        }
    return {}


def _mig_devices(lib: Any, ask: Ask, handle: Any) -> tuple[str, ...]:
    """The UUIDs of a MIG-mode GPU's MIG devices (`nvidia-smi -L` lists them as `MIG ... (UUID: MIG-...)`).
    Slots without a device answer NOT_FOUND, which is no error here."""
    found = []
    for slot in range(ask("nvmlDeviceGetMaxMigDeviceCount", handle, default=0) or 0):
        try:
            device = lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except Exception:  # NVML_ERROR_NOT_FOUND for an empty slot; anything else: the slot is unknown
            continue
        uuid = ask("nvmlDeviceGetUUID", device, default=None)
        if uuid is not None:
            found.append(_text(uuid))
    return tuple(found)


def _enabled(value: int) -> str:
    return "Enabled" if value else "Disabled"


def _retired_pages(ask: Ask, handle: Any) -> dict[str, Any]:
    single = ask("nvmlDeviceGetRetiredPages", handle, 0, default=None)
    double = ask("nvmlDeviceGetRetiredPages", handle, 1, default=None)
    pending = ask("nvmlDeviceGetRetiredPagesPendingStatus", handle, default=None)
    return {
        "single_bit": NA if single is None else len(single),
        "double_bit": NA if double is None else len(double),
        "pending": NA if pending is None else ("Yes" if pending else "No"),
    }


def _remapped_rows(ask: Ask, handle: Any) -> dict[str, Any]:
    rows = ask("nvmlDeviceGetRemappedRows", handle, default=None)
    if rows is None:
        return dict.fromkeys(("correctable", "uncorrectable", "pending", "failure"), NA)
    correctable, uncorrectable, pending, failure = rows
    return {
        "correctable": correctable,
        "uncorrectable": uncorrectable,
        "pending": "Yes" if pending else "No",
        "failure": "Yes" if failure else "No",
    }


# pynvml's unversioned name calls its newest struct (_v3); on a driver without the _v3 function pynvml raises
# NVMLLibraryMismatchError, whose message tells the caller to use _v2 instead.
_PROCESS_QUERIES = ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v2")
# Drivers 535.43 up to 535.86 fill _v3's entries with a 32-byte struct (usedGpuMemory... plus
# usedGpuCcProtectedMemory) without a version bump, while pynvml reads 24-byte v2 entries: from the second
# process on, PIDs and memory are garbage. 535.98 went back to the v2 layout. XuehaiPan/nvitop#79 and #89
# (from the drivers' nvml.h: NVIDIA/nvidia-settings 39c3e28e, 0cb3beff). _v2 has kept its own layout.
_V3_LAYOUT_BREAK = ((535, 43), (535, 98))
# Linux's PID_MAX_LIMIT on 64-bit (include/linux/threads.h: 4 * 1024 * 1024): a larger PID is not a PID
_PID_MAX = 4 * 1024 * 1024


def _version(text: str) -> tuple[int, ...]:
    numbers = [int(n) for n in text.split(".")[:2] if n.isdigit()]
    return tuple(numbers)


def _processes(
    ask: Ask, handle: Any, driver: str, total_mib: float | None, errors: dict[str, str]
) -> tuple[Process, ...] | None:
    low, high = _V3_LAYOUT_BREAK
    queries: tuple[str, ...] = _PROCESS_QUERIES
    if low <= _version(driver) < high:
        queries = tuple(reversed(queries))
    found = None
    for name in queries:
        found = ask(name, handle, default=None)
        if found is not None:
            break
    if found is None:
        return None
    result = []
    for proc in found:
        used = getattr(proc, "usedGpuMemory", None)  # None where NVML reports "not available" (WDDM)
        result.append(Process(int(proc.pid), None if used is None else round(used / _MIB, 1)))
    wrong = [p for p in result if not _plausible(p, total_mib)]
    if wrong:
        # a misread struct, not a fact about the GPU: "n/a", with what was read, rather than a false 31
        errors["processes"] = "implausible entries (pid, MiB): " + ", ".join(
            f"({p.pid}, {p.used_memory_mib})" for p in wrong
        )
        return None
    return tuple(result)


def _plausible(process: Process, total_mib: float | None) -> bool:
    if not 0 < process.pid <= _PID_MAX:
        return False
    used = process.used_memory_mib
    return used is None or total_mib is None or 0 <= used <= total_mib


def _clock_events(ask: Ask, handle: Any) -> tuple[str, ...] | None:
    # "throttle reasons" became "clocks event reasons" in NVML 12.2; older drivers know only the old name
    mask = ask("nvmlDeviceGetCurrentClocksEventReasons", handle, default=None)
    if mask is None:
        mask = ask("nvmlDeviceGetCurrentClocksThrottleReasons", handle, default=None)
    if mask is None:
        return None
    return tuple(name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit)
