#!/usr/bin/env python3
"""Dump what NVML says about this host as fixture candidates for tests/fixtures (run by scripts/gpu-check.sh).

Two views, one JSON object on stdout:
- "raw": pynvml's own answers, per GPU, for the queries tests/fake_nvml.py stands in for (name, UUID, bus id,
  compute capability, memory, compute mode, clocks event reasons, remapped rows, fabric state, MIG mode,
  NVLink states, processes); each query that raises keeps its error text instead of a value, as a record.
- "snapshot": the validator's own NVML probe (tfdist_validate.probes.nvml.collect), serialised exactly as a
  report's facts.nvml.answer, so a `replay`-able fixture can be made from it.
Needs pynvml (nvidia-ml-py); without it, says so in the JSON and exits 0. Never raises for what NVML says.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def _ask(call: Callable[[], Any]) -> Any:
    try:
        value = call()
    except Exception as err:  # an NVML error is a fact to record, not a failure of the dump
        return {"error": f"{type(err).__name__}: {err}"}
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if hasattr(value, "_fields_"):  # a ctypes structure (memory info, ...)
        return {name: _plain(getattr(value, name)) for name, _ in value._fields_}
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "_fields_"):
        return {name: _plain(getattr(value, name)) for name, _ in value._fields_}
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


def _gpu(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    queries: dict[str, Callable[[], Any]] = {
        "name": lambda: nvml.nvmlDeviceGetName(handle),
        "uuid": lambda: nvml.nvmlDeviceGetUUID(handle),
        "pci.bus_id": lambda: nvml.nvmlDeviceGetPciInfo(handle).busId,
        "compute_cap": lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle),
        "memory": lambda: nvml.nvmlDeviceGetMemoryInfo(handle),
        "compute_mode": lambda: nvml.nvmlDeviceGetComputeMode(handle),
        "clocks_event_reasons.active": lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(handle),
        "remapped_rows": lambda: nvml.nvmlDeviceGetRemappedRows(handle),
        "fabric": lambda: nvml.nvmlDeviceGetGpuFabricInfo(handle),
        "mig_mode": lambda: nvml.nvmlDeviceGetMigMode(handle),
        "persistence_mode": lambda: nvml.nvmlDeviceGetPersistenceMode(handle),
        "processes": lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle),
    }
    found = {name: _ask(call) for name, call in queries.items()}
    links = {}
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        state = _ask(lambda link=link: nvml.nvmlDeviceGetNvLinkState(handle, link))
        if isinstance(state, dict):  # no such link: the rest are absent too
            break
        links[str(link)] = state
    found["nvlink"] = links
    return found


def main() -> int:
    out: dict[str, Any] = {"tool": "scripts/nvml-dump.py"}
    try:
        import pynvml  # noqa: TID251 - the raw answers are the point: fixture candidates for tests/fake_nvml.py
    except ImportError as err:
        out["error"] = f"pynvml is not installed: {err}"
        print(json.dumps(out, indent=1))
        return 0
    out["pynvml"] = getattr(pynvml, "__version__", None)
    try:
        pynvml.nvmlInit()
    except Exception as err:
        out["error"] = f"nvmlInit: {type(err).__name__}: {err}"
    else:
        try:
            out["driver_version"] = _ask(pynvml.nvmlSystemGetDriverVersion)
            out["cuda_driver_version"] = _ask(pynvml.nvmlSystemGetCudaDriverVersion)
            count = _ask(pynvml.nvmlDeviceGetCount)
            out["count"] = count
            out["raw"] = [_gpu(pynvml, i) for i in range(count if isinstance(count, int) else 0)]
        finally:
            pynvml.nvmlShutdown()
    try:
        from tfdist_validate.codec import dump
        from tfdist_validate.probes.nvml import collect

        out["snapshot"] = dump(collect())
    except ImportError as err:
        out["snapshot_error"] = f"tfdist_validate is not importable: {err}"
    print(json.dumps(out, indent=1, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
