"""The NVSwitch fabric (exit 14): on HGX / DGX systems CUDA refuses to start (error 802, "system not yet
initialized") until nvidia-fabricmanager has registered every GPU with the NVLink fabric.

Two facts tell it: NVSwitch device nodes (/dev/nvidia-nvswitch*) say the host has a fabric at all, and NVML's
per-GPU fabric state (Hopper and newer) says whether it is up. A GPU that reports no fabric state (A100,
older drivers) is not judged: on such a host only CUDA's error 802 tells, which `diagnose` knows.
"""

from __future__ import annotations

from tfdist_validate.host.gpus import NA, Gpu
from tfdist_validate.host.runtime import RuntimeFacts

# The fix, in one place: the service, the version pairing rule, and the systems where this node is not in
# charge (NVIDIA's Fabric Manager user guide; GB200 NVL racks are managed from the NVLink switch trays)
FIX = (
    "start nvidia-fabricmanager (`sudo systemctl enable --now nvidia-fabricmanager`); its package"
    " version must equal the driver's exactly (driver 550.90.07 with nvidia-fabricmanager 550.90.07), so"
    " upgrade both together, then check `nvidia-smi -q | grep -A2 Fabric` shows State Completed, Status"
    " Success; on B200 and newer NVLink 5 systems it also needs nvlsm; GB200 NVL racks manage the fabric"
    " from the NVLink switch trays (NMX), not from this node: ask the rack's operator"
)
DOC = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
# states in which CUDA cannot start on the GPU
_NOT_READY = ("Not Started", "In Progress")


def not_ready(gpus: tuple[Gpu, ...]) -> list[Gpu]:
    """GPUs whose fabric registration has not finished, or finished with an error."""
    return [
        g
        for g in gpus
        if g.fabric_state in _NOT_READY
        or (g.fabric_state == "Completed" and g.fabric_status not in ("Success", NA))
    ]


def failure(gpus: tuple[Gpu, ...], facts: RuntimeFacts | None) -> str | None:
    """The summary of a fabric that is not ready, or None."""
    bad = not_ready(gpus)
    if not bad:
        return None
    groups: dict[str, list[str]] = {}
    for g in bad:
        shown = g.fabric_state + ("" if g.fabric_status == NA else f", {g.fabric_status}")
        groups.setdefault(shown, []).append(str(g.index))
    states = "; ".join(f"GPU {', '.join(indices)}: {shown}" for shown, indices in groups.items())
    switches = f" on a host with {len(facts.nvswitches)} NVSwitch(es)" if facts and facts.nvswitches else ""
    return (
        f"the NVLink fabric is not initialised{switches} ({states}): nvidia-fabricmanager is not running or"
        " is not the driver's version; every CUDA program fails with error 802 (system not yet initialized)"
    )


def note(gpus: tuple[Gpu, ...], facts: RuntimeFacts | None) -> str | None:
    """An NVSwitch host whose GPUs cannot report their fabric state: say what would tell."""
    if not facts or not facts.nvswitches or any(g.fabric_state != NA for g in gpus if not g.error):
        return None
    return (
        f"{len(facts.nvswitches)} NVSwitch device(s): this host's fabric needs nvidia-fabricmanager of the"
        " driver's version; NVML cannot report the fabric state on these GPUs, so CUDA error 802 would be the"
        " sign it is down"
    )
