"""The driver layer: NVML first (one session, lazily), nvidia-smi as the fallback and the cross-check.

An NVML error is mapped to the verdict for this kind of host: the same "Unknown Error" means "the container
lost its GPUs after a systemd reload" in a container and "look at dmesg" on a host.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from tfdist_validate.checks import fixes, host_state
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host import nvidia_smi
from tfdist_validate.host.gpus import DriverSnapshot, Gpu, ProbeError
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.result import Layer, Outcome, failed, passed, skipped, warned
from tfdist_validate.runner import Check

NVML_TIMEOUT_S = 30.0
SMI_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class SmiAnswer:
    snapshot: DriverSnapshot | None  # parsed facts, when nvidia-smi answered
    error: ProbeError | None  # its message, when it ran and failed
    ran: bool  # False: not installed here


def _nvml(ctx: Context) -> DriverSnapshot | None:
    """The NVML probe under a deadline; None if it hung (a C call cannot be interrupted, only abandoned)."""
    box: list[DriverSnapshot] = []
    worker = threading.Thread(target=lambda: box.append(ctx.probes.nvml()), daemon=True, name="nvml-probe")
    worker.start()
    worker.join(min(NVML_TIMEOUT_S, max(1.0, ctx.deadline.remaining())))
    return box[0] if box else None


def _smi_binary(facts: RuntimeFacts | None) -> str:
    # WSL puts nvidia-smi in /usr/lib/wsl/lib, usually not on PATH; elsewhere PATH finds it (or nothing does)
    if facts and facts.wsl and facts.wsl.nvidia_smi:
        return facts.wsl.nvidia_smi
    return "nvidia-smi"


def _nvidia_smi(ctx: Context, facts: RuntimeFacts | None) -> SmiAnswer:
    binary = _smi_binary(facts)
    fields: tuple[str, ...] = nvidia_smi.QUERY_FIELDS
    timeout = min(SMI_TIMEOUT_S, max(1.0, ctx.deadline.remaining()))
    result = ctx.probes.run_command(nvidia_smi.query_argv(binary, fields), timeout)
    if not result.ok and "not a valid field" in result.stdout + result.stderr:
        fields = tuple(f for f in fields if f != "compute_cap")  # drivers older than ~510
        result = ctx.probes.run_command(nvidia_smi.query_argv(binary, fields), timeout)
    return _parse_smi(result, fields)


def _parse_smi(result: CommandResult, fields: tuple[str, ...]) -> SmiAnswer:
    if result.returncode is None and not (result.stdout or result.stderr):
        return SmiAnswer(None, None, ran=False)  # not installed, or killed at the deadline with no output
    if result.ok:
        try:
            return SmiAnswer(nvidia_smi.snapshot_from_query(result.stdout, fields), None, ran=True)
        except ValueError as err:
            return SmiAnswer(None, ProbeError("unparsed", str(err), "nvidia-smi"), ran=True)
    return SmiAnswer(None, nvidia_smi.classify_error(result.stdout + "\n" + result.stderr), ran=True)


def check_driver(ctx: Context) -> Outcome:
    if ctx.dry_run:
        return skipped(host_state.DRY_RUN)
    facts = host_state.runtime(ctx)
    nvml = _nvml(ctx)
    smi = _nvidia_smi(ctx, facts)
    details: dict[str, Any] = {
        "nvml_error": nvml.error.to_json() if nvml and nvml.error else None,
        "nvidia_smi": _smi_json(smi),
    }
    if nvml is None:
        ctx.section("host")["driver"] = {
            "source": "nvml",
            "version": None,
            "cuda_version": None,
            "error": None,
        }
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
            host_state.put_driver(ctx, nvml)
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
    host_state.put_driver(ctx, snapshot)
    _record(ctx, snapshot, smi)
    if not snapshot.gpus:
        code = ExitCode.CONTAINER_NO_GPU if facts and facts.in_container else ExitCode.NO_DRIVER
        hint = fixes.container(facts) if facts and facts.in_container else fixes.HOST_DRIVER
        return failed(code, f"driver {snapshot.driver_version} is loaded but reports no GPUs", hint, details)
    notes += _cross_check(snapshot, smi)
    summary = _summary(snapshot)
    warnings, hints = _warnings(snapshot.gpus)
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


def _smi_json(smi: SmiAnswer) -> dict[str, Any]:
    return {
        "ran": smi.ran,
        "error": smi.error.to_json() if smi.error else None,
        "gpus": len(smi.snapshot.gpus) if smi.snapshot else None,
        "driver_version": smi.snapshot.driver_version if smi.snapshot else None,
    }


def _record(ctx: Context, snapshot: DriverSnapshot, smi: SmiAnswer) -> None:
    host = ctx.section("host")
    host["driver"] = snapshot.to_json() | {"nvidia_smi": _smi_json(smi)}
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


def _warnings(gpus: tuple[Gpu, ...]) -> tuple[list[str], list[str]]:
    warnings: list[str] = []
    hints: list[str] = []
    lost = [g for g in gpus if g.error]
    if lost:
        warnings += [f"GPU {g.index} does not answer ({g.error})" for g in lost]
        hints.append(
            "check `sudo dmesg | grep -i xid`; a lost GPU needs a reset (`nvidia-smi -r`) or a reboot"
        )
    mig = [g for g in gpus if g.mig_mode == "Enabled"]
    if mig:
        warnings.append(
            f"MIG is enabled on GPU {', '.join(str(g.index) for g in mig)}: CUDA gives a process one MIG"
            " instance, so MirroredStrategy cannot span MIG instances"
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
    ctx.section("host")["driver"] = nvml.to_json() | {"nvidia_smi": _smi_json(smi)}
    code, summary, hint = classify(kind, error.message, facts)
    return failed(code, summary, hint, details)


def classify(kind: str, message: str, facts: RuntimeFacts | None) -> tuple[ExitCode, str, str]:
    """(exit code, summary, fix) for an NVML error of `kind` on this kind of host."""
    container = facts is not None and facts.in_container
    wsl2 = facts is not None and facts.wsl2 and not container
    nvml = f"NVML: {message}"
    if wsl2 and kind in ("library_not_found", "driver_not_loaded", "unknown"):
        return ExitCode.WSL2_PASSTHROUGH, f"{nvml}: WSL2's GPU passthrough does not work", fixes.WSL
    if kind == "library_not_found":
        if container:
            return (
                ExitCode.CONTAINER_NO_GPU,
                f"{nvml}: libnvidia-ml.so.1 was not injected into this container",
                fixes.container(facts) + fixes.driver_capabilities_note(facts) if facts else fixes.DOCKER,
            )
        return (
            ExitCode.NO_DRIVER,
            f"{nvml}: the driver's user-space library libnvidia-ml.so.1 is not installed",
            "reinstall the NVIDIA driver package that matches the loaded kernel module; " + fixes.HOST_DRIVER,
        )
    if kind == "driver_not_loaded":
        where = "on the host (containers share its kernel driver): " if container else ""
        return (
            ExitCode.NO_DRIVER,
            f"{nvml}: the NVIDIA kernel module is not loaded",
            where + fixes.HOST_DRIVER,
        )
    if kind == "no_permission":
        if container:
            return (
                ExitCode.CONTAINER_NO_GPU,
                f"{nvml}: this container may not open the GPU device nodes",
                "let the NVIDIA runtime grant the devices (`--gpus all`, CDI, or the Kubernetes device"
                " plugin) instead of bind-mounting /dev/nvidia*",
            )
        return (
            ExitCode.NO_DRIVER,
            f"{nvml}: this user may not open /dev/nvidia*",
            "run as a user with access to /dev/nvidia* (the driver's default mode is 0666; check the"
            " NVreg_DeviceFileMode/NVreg_DeviceFileGID module options and the video group)",
        )
    if kind == "unknown" and container:
        return (
            ExitCode.CONTAINER_NO_GPU,
            f"{nvml}: the container lost access to its GPUs (typically after `systemctl daemon-reload` on the"
            " host; NVIDIA/nvidia-container-toolkit#48)",
            "recreate the container or pod; to stop it recurring, run `sudo nvidia-ctk system"
            " create-dev-char-symlinks --create-all` on the host (see the toolkit's troubleshooting page) or"
            " use the cgroupfs cgroup driver",
        )
    if kind == "version_mismatch":
        where = "the host's" if container else "the"
        return (
            ExitCode.NO_DRIVER,
            f"{nvml}: {where} NVIDIA kernel module and user-space libraries are different versions",
            "the driver was upgraded without a reboot: reboot (or unload and reload the nvidia kernel"
            " modules)",
        )
    return (
        ExitCode.NO_DRIVER,
        nvml,
        "run `nvidia-smi` and `sudo dmesg | grep -i -e nvrm -e xid`; a reboot clears most driver faults",
    )


CHECKS = (Check("driver.nvml", Layer.DRIVER, check_driver, requires=("runtime.gpu_access",)),)
