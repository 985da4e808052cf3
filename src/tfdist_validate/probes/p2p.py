"""How each two GPUs reach each other, read through `probes.nvml`'s one NVML session: NVML's peer-to-peer
status (nvmlDeviceGetP2PStatus; `nvidia-smi topo -p2p r`, `w`, `n`) and their closest common PCIe
ancestor (nvmlDeviceGetTopologyCommonAncestor; the words of `nvidia-smi topo -m`)."""

from __future__ import annotations

import contextlib
import functools
import itertools
from typing import Any

from tfdist_validate.host.gpus import NA, GpuPair

# nvmlGpuP2PStatus_t, in nvidia-smi topo -p2p's legend's words
P2P_STATUS = {
    0: "OK",
    1: "chipset not supported",
    2: "GPU not supported",
    3: "topology not supported",
    4: "disabled by regkey",
    5: "not supported",
    6: "unknown",
}
# nvmlGpuP2PCapsIndex_t
CAPS = {"p2p_read": 0, "p2p_write": 1, "p2p_nvlink": 2}
# nvmlGpuTopologyLevel_t -> nvidia-smi topo -m's word (INTERNAL: two GPUs on one board)
TOPOLOGY = {0: "internal", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def read(lib: Any, query: Any, count: int) -> tuple[GpuPair, ...]:
    """Every two GPUs whose handles NVML gives. `query` is probes.nvml's `_query` (unbound)."""
    handles: dict[int, Any] = {}
    for index in range(count):
        with contextlib.suppress(Exception):  # that GPU's own record already says what went wrong
            handles[index] = lib.nvmlDeviceGetHandleByIndex(index)
    pairs = []
    for a, b in itertools.combinations(sorted(handles), 2):
        errors: dict[str, str] = {}
        ask = functools.partial(query, lib, errors=errors)
        try:
            found: dict[str, Any] = {
                name: ask("nvmlDeviceGetP2PStatus", handles[a], handles[b], index, default=None)
                for name, index in CAPS.items()
            }
            level = ask("nvmlDeviceGetTopologyCommonAncestor", handles[a], handles[b], default=None)
        except Exception as err:  # GPU lost: a fact about the pair
            pairs.append(GpuPair(a, b, error=f"{type(err).__name__}: {err}"))
            continue
        statuses = {k: NA if v is None else P2P_STATUS.get(int(v), f"status {v}") for k, v in found.items()}
        topology = NA if level is None else TOPOLOGY.get(int(level), f"level {level}")
        pairs.append(GpuPair(a, b, topology=topology, query_errors=errors, **statuses))
    return tuple(pairs)
