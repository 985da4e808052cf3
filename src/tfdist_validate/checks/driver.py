"""The driver layer: NVML first (one session, lazily), nvidia-smi as the fallback and the cross-check.

An NVML error is mapped to the verdict for this kind of host: the same "Unknown Error" means "the container
lost its GPUs after a systemd reload" in a container and "look at dmesg" on a host.
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.checks import fabric, fixes
from tfdist_validate.checks.nvml_errors import classify, gpu_error
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.gpus import DriverSnapshot, Gpu
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes import nvidia_smi
from tfdist_validate.probes.nvidia_smi import SmiAnswer
from tfdist_validate.result import Layer, Outcome, failed, passed, warned
from tfdist_validate.runner import Check

NVML_TIMEOUT_S = 30.0
SMI_TIMEOUT_S = 15.0


def _smi_binary(facts: RuntimeFacts | None) -> str:
    # WSL puts nvidia-smi in /usr/lib/wsl/lib, usually not on PATH; elsewhere PATH finds it (or nothing does)
    if facts and facts.wsl and facts.wsl.nvidia_smi:
        return facts.wsl.nvidia_smi
    return nvidia_smi.BINARY


def _nvidia_smi(ctx: Context, facts: RuntimeFacts | None) -> SmiAnswer:
    timeout = min(SMI_TIMEOUT_S, max(1.0, ctx.deadline.remaining()))
    return nvidia_smi.query(ctx.probes.run_command, _smi_binary(facts), timeout)


def check_driver(ctx: Context) -> Outcome:
    facts = ctx.facts.runtime
    nvml = ctx.probes.ask_nvml(min(NVML_TIMEOUT_S, max(1.0, ctx.deadline.remaining())))
    smi = _nvidia_smi(ctx, facts)
    details: dict[str, Any] = {
        "nvml_error": nvml.error.to_json() if nvml and nvml.error else None,
        "nvidia_smi": smi.to_json(),
    }
    if nvml is None:
        _record(ctx, DriverSnapshot("nvml", None), smi)
        return failed(
            ExitCode.TIMEOUT,
            f"NVML did not answer within {NVML_TIMEOUT_S:g} s: the driver is hung",
            "check `sudo dmesg | grep -i xid` for GPU errors; a GPU that fell off the bus needs a reset"
            " or a reboot",
            details,
        )
    notes: list[str] = []
    snapshot = nvml
    if nvml.error is not None:
        if smi.snapshot is not None and nvml.error.kind in ("library_not_found", "binding_missing"):
            snapshot = smi.snapshot
            notes.append(f"pynvml: {nvml.error.message}; the facts below come from nvidia-smi")
        elif _nvml_not_injected(nvml, facts):
            # CUDA can still work: libcuda is here, only NVML (the `utility` capability) is missing
            ctx.facts.driver = nvml
            _record(ctx, nvml, smi)
            return warned(
                f"NVML: {nvml.error.message}: libnvidia-ml.so.1 was not injected, but libcuda.so.1 was;"
                " driver and health facts are unknown, TensorFlow's view decides",
                "add `utility` to NVIDIA_DRIVER_CAPABILITIES (e.g. compute,utility) so NVML and nvidia-smi"
                " work",
                details,
            )
        else:
            return _record_failure(ctx, nvml, smi, facts, details)
    ctx.facts.driver = snapshot
    _record(ctx, snapshot, smi)
    if not snapshot.gpus:
        code = ExitCode.CONTAINER_NO_GPU if facts and facts.in_container else ExitCode.NO_DRIVER
        hint = fixes.container(facts) if facts and facts.in_container else fixes.HOST_DRIVER
        return failed(code, f"driver {snapshot.driver_version} is loaded but reports no GPUs", hint, details)
    fabric_down = fabric.failure(snapshot.gpus, facts)
    if fabric_down:
        return failed(ExitCode.FABRIC_NOT_READY, fabric_down, f"{fabric.FIX} ({fabric.DOC})", details)
    notes += _cross_check(snapshot, smi)
    # information, not a warning: the test hosts' and many real hosts' NVSwitch nodes with older GPUs
    details["fabric"] = fabric.note(snapshot.gpus, facts)
    summary = _summary(snapshot)
    warnings, hints = _warnings(snapshot.gpus, facts, ctx.env.get("CUDA_VISIBLE_DEVICES"))
    if warnings or notes:
        return warned("; ".join([summary, *notes, *warnings]), "; ".join(hints), details)
    return passed(summary, details)


def _nvml_not_injected(nvml: DriverSnapshot, facts: RuntimeFacts | None) -> bool:
    return (
        nvml.error is not None
        and nvml.error.kind == "library_not_found"
        and facts is not None
        and facts.in_container
        and facts.has_library("libcuda.so.1")
        and not facts.has_library("libnvidia-ml.so.1")
    )


def _record(ctx: Context, snapshot: DriverSnapshot, smi: SmiAnswer) -> None:
    """The report's `host.driver` and `host.gpus`, in one shape whatever happened (the one place they are
    written)."""
    host = ctx.section("host")
    host["driver"] = snapshot.to_json() | {"nvidia_smi": smi.to_json()}
    host["gpus"] = [gpu.to_json() for gpu in snapshot.gpus]


def _summary(snapshot: DriverSnapshot) -> str:
    cuda = f" (CUDA {snapshot.cuda_version})" if snapshot.cuda_version else ""
    gpus = ", ".join(
        f"{g.index}: {g.name or 'unknown'}" + (f" cc {g.compute_capability}" if g.compute_capability else "")
        for g in snapshot.gpus
        if not g.error
    )
    count = sum(1 for g in snapshot.gpus if not g.error)
    source = "NVML" if snapshot.source == "nvml" else snapshot.source
    return f"driver {snapshot.driver_version}{cuda} via {source}; {count} GPU(s): {gpus}"


def _cross_check(nvml: DriverSnapshot, smi: SmiAnswer) -> list[str]:
    if nvml.source != "nvml" or smi.snapshot is None:
        return []
    other = smi.snapshot
    notes = []
    if other.driver_version and nvml.driver_version and other.driver_version != nvml.driver_version:
        notes.append(f"nvidia-smi reports driver {other.driver_version}, NVML {nvml.driver_version}")
    if len(other.gpus) != len(nvml.gpus):
        notes.append(f"nvidia-smi lists {len(other.gpus)} GPU(s), NVML {len(nvml.gpus)}")
    return notes


def _mig_use(mig: list[Gpu], cuda_visible: str | None) -> str:
    """Which MIG devices there are and which one this run's CUDA process gets: a process enumerates a
    single MIG device (NVIDIA's MIG user guide, "CUDA Device Enumeration"), the first CUDA_VISIBLE_DEVICES
    names."""
    devices = [uuid for gpu in mig for uuid in gpu.mig_devices]
    if not devices:
        return "; no MIG device is created on it"
    named = [t.strip() for t in (cuda_visible or "").split(",") if t.strip().startswith("MIG-")]
    chosen = next((d for t in named for d in devices if d.startswith(t)), None)
    which = (
        f"this run uses {chosen} (the first MIG device CUDA_VISIBLE_DEVICES names)"
        if chosen
        else "this run uses one of them; set CUDA_VISIBLE_DEVICES to a MIG UUID to choose which"
    )
    return f"; its MIG devices: {', '.join(devices)}; {which}"


def _warnings(
    gpus: tuple[Gpu, ...], facts: RuntimeFacts | None, cuda_visible: str | None = None
) -> tuple[list[str], list[str]]:
    warnings: list[str] = []
    hints: list[str] = []
    for gpu in gpus:
        if gpu.error:
            _, meaning, fix = gpu_error(gpu.error, facts)
            warnings.append(f"GPU {gpu.index} {meaning} ({gpu.error})")
            hints += [fix] if fix not in hints else []
    mig = [g for g in gpus if g.mig_mode == "Enabled"]
    if mig:
        warnings.append(
            f"MIG is enabled on GPU {', '.join(str(g.index) for g in mig)}: CUDA gives a process one MIG"
            " instance, so MirroredStrategy cannot span MIG instances" + _mig_use(mig, cuda_visible)
        )
        hints.append(
            "for multi-GPU training disable MIG (`sudo nvidia-smi -i <gpu> -mig 0`, then reset the GPU),"
            " or give each worker process one MIG instance"
        )
    return warnings, hints


def _record_failure(
    ctx: Context, nvml: DriverSnapshot, smi: SmiAnswer, facts: RuntimeFacts | None, details: dict[str, Any]
) -> Outcome:
    error = nvml.error
    assert error is not None
    # NVML's own kind is the most precise; nvidia-smi's message can name what a generic NVML error hides
    kind = error.kind
    if kind in ("nvml_error", "binding_missing") and smi.error is not None:
        kind = smi.error.kind
    _record(ctx, nvml, smi)
    code, summary, hint = classify(kind, error.message, facts)
    return failed(code, summary, hint, details)


CHECKS = (Check("driver.nvml", Layer.DRIVER, check_driver, requires=("runtime.gpu_access",), gpu_only=True),)
