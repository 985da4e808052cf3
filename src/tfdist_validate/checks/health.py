"""The health layer: is each GPU fit to train right now? Warn by default; fail (31) with fail_on_health.

Every counter an old driver or a GeForce card does not report is "n/a" in the facts and simply not judged.
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.checks import p2p
from tfdist_validate.checks.nvml_errors import gpu_error
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host import pci
from tfdist_validate.host.gpus import Gpu
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.host.visible import run_gpus
from tfdist_validate.result import Layer, Outcome, failed, passed, skipped, warned
from tfdist_validate.runner import Check

# clock-event reasons that mean the GPU is slowed by a fault or heat, not by being idle or by its power cap
_SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def problems(gpu: Gpu, facts: RuntimeFacts | None = None) -> tuple[list[str], list[str]]:
    """(problems, hints) for one GPU.

    Uncorrected ECC errors are judged by the volatile counter (since the last driver load): the aggregate
    (lifetime) counter never goes down, so a GPU whose bad rows were remapped or whose pages were retired
    would fail forever. What is still wrong after such an error is a pending remap or retirement (needs a
    reset) or a failed remap (needs service), judged below; the aggregate count is information
    (`aggregate_ecc`). NVIDIA's A100/H100 memory error management guide: "Row-remapping ... pending"."""
    found: list[str] = []
    hints: list[str] = []
    where = f"GPU {gpu.index}"
    if gpu.error:
        counts, meaning, fix = gpu_error(gpu.error, facts)
        return ([f"{where} {meaning} ({gpu.error})"], [fix]) if counts else ([], [])
    ecc = gpu.ecc_errors
    if _positive(ecc.get("volatile_uncorrected")):
        found.append(f"{where}: {ecc['volatile_uncorrected']} volatile uncorrected ECC errors")
        hints.append(
            "uncorrected ECC errors since the driver loaded: drain the node and run"
            " `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`"
        )
    if gpu.retired_pages.get("pending") == "Yes":
        found.append(f"{where}: page retirement pending")
        hints.append("reset the GPU or reboot so the pending page retirement takes effect")
    rows = gpu.remapped_rows
    if rows.get("pending") == "Yes":
        found.append(f"{where}: row remapping pending")
        hints.append("reset the GPU or reboot to apply the pending row remapping")
    if rows.get("failure") == "Yes":
        found.append(f"{where}: row remapping failed")
        hints.append("a failed row remapping means the GPU's memory needs service (RMA)")
    busy = [p for p in gpu.processes or () if p.used_memory_mib is None or p.used_memory_mib > 0]
    if busy:
        pids = ", ".join(str(p.pid) for p in busy)
        used = sum(p.used_memory_mib or 0 for p in busy)
        found.append(f"{where}: {len(busy)} other process(es) hold {used:g} MiB (pid {pids})")
        hints.append("stop the other GPU processes first, or pick free GPUs with --devices")
    if gpu.compute_mode == "Exclusive_Process" and gpu.processes:
        found.append(f"{where}: compute mode Exclusive_Process and another process holds it")
        hints.append("wait for that process, or `sudo nvidia-smi -i <gpu> -c DEFAULT`")
    elif gpu.compute_mode == "Prohibited":
        found.append(f"{where}: compute mode Prohibited (no CUDA contexts allowed)")
        hints.append("`sudo nvidia-smi -i <gpu> -c DEFAULT`")
    slow = [r for r in gpu.clock_event_reasons or () if r in _SLOWDOWNS]
    if slow:
        found.append(f"{where}: clocks slowed by {', '.join(slow)}")
        hints.append("check cooling and power (`nvidia-smi -q -d PERFORMANCE`)")
    nvlink_found, nvlink_hints = nvlink_problems(gpu)
    return found + nvlink_found, hints + nvlink_hints


def nvlink_problems(gpu: Gpu) -> tuple[list[str], list[str]]:
    """Links down beside links up (`nvidia-smi nvlink -s`), and NVLink error counts (`nvidia-smi nvlink
    -e`): NCCL's all-reduce then takes slower paths, or hangs. A GPU with every link down is not judged: a
    PCIe card without an NVLink bridge has its links but none up."""
    found: list[str] = []
    hints: list[str] = []
    links = gpu.nvlink_links or ()
    down = [str(i) for i, state in enumerate(links) if state != "active"]
    if down and len(down) < len(links):
        found.append(
            f"GPU {gpu.index}: NVLink {len(links) - len(down)} of {len(links)} links active"
            f" (down: link {', '.join(down)})"
        )
        hints.append(
            "a down NVLink link makes collectives slower or hang: see `nvidia-smi nvlink -s`; reset the GPU"
            " or reboot, and have the baseboard serviced if it stays down"
        )
    totals: dict[str, int] = {}
    for counts in gpu.nvlink_errors.values():
        for name, n in counts.items():
            totals[name] = totals.get(name, 0) + n
    counted = {name: n for name, n in totals.items() if n > 0}
    if counted:
        shown = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in counted.items())
        found.append(f"GPU {gpu.index}: NVLink errors since the driver loaded: {shown}")
        hints.append(
            "NVLink CRC / replay / recovery errors mean a marginal link: watch `nvidia-smi nvlink -e`;"
            " if they grow, drain the node for service"
        )
    return found, hints


def check_health(ctx: Context) -> Outcome:
    snapshot = ctx.facts.driver
    if snapshot is None or not snapshot.gpus:
        return skipped("no GPU facts from NVML to judge health by")
    missing = missing_from_nvml(snapshot.gpus, ctx.facts.runtime)
    if missing:
        return failed(
            ExitCode.GPU_UNHEALTHY,
            f"{len(missing)} NVIDIA GPU(s) on the PCI bus that NVML does not list: {', '.join(missing)}"
            f" (NVML lists {len(snapshot.gpus)}); a GPU that fell off the bus (Xid 79) stays on the bus"
            " but leaves the driver",
            "check `sudo dmesg | grep -i -e xid -e 'fallen off'`; the GPU needs a reset (`nvidia-smi -r`)"
            " or a reboot, and service (power, cooling, riser / baseboard) if it happens again",
            {"missing_from_nvml": missing},
        )
    # Judge the GPUs this run trains on; a problem of a GPU outside CUDA_VISIBLE_DEVICES / --devices is
    # reported but never fails the run (None: which GPUs are used cannot be told, so all are judged).
    used = run_gpus(snapshot.gpus, ctx.env, ctx.settings.devices)
    judged = list(snapshot.gpus) if used is None else used
    found, hints = _problems_of(judged, ctx.facts.runtime)
    aside, aside_hints = _problems_of([g for g in snapshot.gpus if g not in judged], ctx.facts.runtime)
    source = "NVML" if snapshot.source == "nvml" else "nvidia-smi (no ECC, page or clock counters)"
    lifetime = {
        f"GPU {g.index}": g.ecc_errors["aggregate_uncorrected"]
        for g in judged
        if _positive(g.ecc_errors.get("aggregate_uncorrected"))
    }
    info: dict[str, Any] = {"aggregate_uncorrected_ecc": lifetime} if lifetime else {}
    if used is not None:
        info["judged_gpus"] = [g.index for g in judged]
        if aside:
            info["not_used_problems"] = aside
    links, link_hints, link_info = p2p.view(snapshot.pairs, judged, ctx.facts.runtime)
    info.update(link_info)
    which = "GPU(s)" if used is None or len(judged) == len(snapshot.gpus) else "GPU(s) this run uses"
    if links:
        info["peer_to_peer"] = links
    if not found and links:
        return warned("; ".join(links + aside), "; ".join(link_hints + aside_hints), info)
    if not found:
        note = (
            f"; lifetime uncorrected ECC errors {lifetime}, none since the driver loaded and no remap"
            " pending or failed"
            if lifetime
            else ""
        )
        summary = f"{len(judged)} {which} healthy by {source}{note}"
        if aside:
            return warned(
                f"{summary}; not used by this run: {'; '.join(aside)}",
                "; ".join(aside_hints) + " (these GPUs are outside CUDA_VISIBLE_DEVICES / --devices)",
                info,
            )
        return passed(summary, info)
    details = {"problems": found, **info}
    summary = "; ".join(found + links)
    hints += [h for h in link_hints if h not in hints]
    if ctx.settings.fail_on_health:
        return failed(ExitCode.GPU_UNHEALTHY, summary, "; ".join(hints), details)
    return warned(summary, "; ".join(hints), details)


def missing_from_nvml(gpus: tuple[Gpu, ...], facts: RuntimeFacts | None) -> list[str]:
    """PCI addresses of NVIDIA GPUs the bus lists and NVML does not. Judged on a host only: a container's
    /sys shows the host's every GPU, NVML only those given to it; and only where NVML gave every GPU's
    bus id."""
    if facts is None or facts.in_container or facts.pci_gpus is None or not gpus:
        return []
    ids = [g.pci_bus_id for g in gpus]
    if any(i is None for i in ids):
        return []
    seen = {pci.same_address(i) for i in ids if i is not None}
    return [a for a in facts.pci_gpus if a not in seen]


def _problems_of(gpus: list[Gpu], facts: RuntimeFacts | None) -> tuple[list[str], list[str]]:
    found: list[str] = []
    hints: list[str] = []
    for gpu in gpus:
        gpu_found, gpu_hints = problems(gpu, facts)
        found += gpu_found
        hints += [h for h in gpu_hints if h not in hints]
    return found, hints


CHECKS = (Check("health.gpus", Layer.HEALTH, check_health, requires=("driver.nvml",), gpu_only=True),)
