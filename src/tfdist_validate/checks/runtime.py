"""The runtime layer: where are we (host, container, Kubernetes pod, WSL), and did GPUs reach this place?

Reads only files under --root and the environment. No NVML, no TensorFlow: a container started without
`--gpus` is told so before anything slow or fragile runs.
"""

from __future__ import annotations

from typing import Any

from tfdist_validate.checks import fixes
from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host import collective_env
from tfdist_validate.host.runtime import UNCACHED_LIB_DIRS, Credentials, NodeAccess, RuntimeFacts
from tfdist_validate.result import Layer, Outcome, failed, passed, skipped, warned
from tfdist_validate.runner import DRY_RUN, Check

_KIND_LABEL = {
    "host": "bare host or VM",
    "kubernetes": "Kubernetes pod",
    "container": "container (engine unknown)",
}


def label(facts: RuntimeFacts) -> str:
    text = _KIND_LABEL.get(facts.kind, f"{facts.kind} container")
    if facts.wsl:
        text = f"WSL{facts.wsl.version}" if facts.kind == "host" else f"{text} on WSL{facts.wsl.version}"
    return text


def _report(facts: RuntimeFacts) -> dict[str, Any]:
    wsl = facts.wsl
    return {
        "runtime": {
            "kind": facts.kind,
            "label": label(facts),
            "container": facts.in_container,
            "kubernetes": facts.kubernetes,
            "wsl": wsl.version if wsl else None,
        },
        "container": (
            {
                "engine": facts.engine,
                "evidence": list(facts.container_evidence),
                "nvidia_visible_devices": facts.nvidia_visible_devices,
                "nvidia_driver_capabilities": facts.nvidia_driver_capabilities,
            }
            if facts.in_container
            else None
        ),
        "kubernetes": {"evidence": list(facts.kubernetes_evidence)} if facts.kubernetes else None,
        "wsl2": (
            {
                "version": wsl.version,
                "kernel": wsl.kernel,
                "dxg": wsl.dxg,
                "libcuda": wsl.libcuda,
                "libnvidia_ml": wsl.libnvidia_ml,
                "nvidia_smi": wsl.nvidia_smi,
                "shadowing_libcuda": list(wsl.shadowing_libcuda),
            }
            if wsl
            else None
        ),
        "device_nodes": {"gpus": list(facts.gpu_nodes), "control": list(facts.control_nodes)},
        "kernel_driver": {"nvrm": facts.kernel_driver, "version": facts.kernel_driver_version},
        "driver_libraries": {name: list(dirs) for name, dirs in facts.libraries.items()},
        "cuda_visible_devices": {
            "value": facts.cuda_mask.value,
            "hides_all": facts.cuda_mask.hides_all,
            "reason": facts.cuda_mask.reason,
        },
    }


def check_environment(ctx: Context) -> Outcome:
    facts = ctx.probes.runtime(ctx.root, ctx.env)
    ctx.facts.runtime = facts
    ctx.section("host").update(_report(facts))
    ctx.section("host")["collective_env"] = collective_env.effects(ctx.env)  # information: never judged
    parts = [label(facts)]
    if facts.kernel_driver_version:
        parts.append(f"NVIDIA kernel driver {facts.kernel_driver_version}")
    if facts.gpu_nodes:
        parts.append(f"{len(facts.gpu_nodes)} GPU device node(s)")
    elif facts.wsl2 and facts.wsl and facts.wsl.dxg:
        parts.append("/dev/dxg")
    else:
        parts.append("no NVIDIA GPU device nodes")
    summary = "; ".join(parts)
    if facts.cuda_mask.hides_all:
        return warned(
            f"{summary}; {facts.cuda_mask.reason}: that hides every GPU from CUDA and TensorFlow",
            "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. CUDA_VISIBLE_DEVICES=0,1)",
        )
    return passed(summary)


def check_gpu_access(ctx: Context) -> Outcome:
    facts = ctx.facts.need_runtime()
    if ctx.dry_run:
        return skipped(f"{DRY_RUN}; this is a {label(facts)}")
    if facts.in_container:
        return _container(facts)
    if facts.wsl:
        return _wsl(facts)
    return _host(facts)


def _host(facts: RuntimeFacts) -> Outcome:
    if not facts.gpu_nodes and not facts.kernel_driver:
        return failed(
            ExitCode.NO_DRIVER,
            "no NVIDIA driver on this host: no /proc/driver/nvidia/version, no /dev/nvidia* device nodes",
            fixes.HOST_DRIVER,
        )
    if not facts.gpu_nodes:
        # nvidia-modprobe creates /dev/nvidia* on first use (nvidia-smi, CUDA): absence alone is not a fault
        return passed(
            f"NVIDIA kernel driver {facts.kernel_driver_version} loaded; device nodes not created yet"
        )
    return passed(f"{len(facts.gpu_nodes)} GPU device node(s) on the host")


def _container(facts: RuntimeFacts) -> Outcome:
    has_gpus = bool(facts.gpu_nodes) or (facts.wsl2 and facts.wsl is not None and facts.wsl.dxg)
    kind = label(facts)
    if not has_gpus:
        host_driver = (
            f"; the host's NVIDIA driver {facts.kernel_driver_version} is loaded, so the GPUs were not"
            " passed in"
            if facts.kernel_driver_version
            else ""
        )
        return failed(
            ExitCode.CONTAINER_NO_GPU,
            f"{kind} without GPU access: no /dev/nvidia* device nodes{host_driver}",
            fixes.container(facts),
            {"nvidia_visible_devices": facts.nvidia_visible_devices},
        )
    denied = facts.denied_nodes()
    if denied and facts.credentials is not None:
        return _denied(kind, denied, facts.credentials)
    if not facts.has_library("libcuda.so.1"):
        return failed(
            ExitCode.CONTAINER_NO_GPU,
            f"{kind} has GPU device nodes but no libcuda.so.1: the driver's libraries were not injected",
            "let the NVIDIA runtime inject them: `--gpus all` (Kubernetes: the device plugin) instead of"
            f" passing /dev/nvidia* with --device{fixes.driver_capabilities_note(facts)}",
        )
    hidden = facts.off_loader_path("libcuda.so.1") or facts.off_loader_path("libnvidia-ml.so.1")
    if hidden:
        return failed(
            ExitCode.CONTAINER_NO_GPU,
            f"{kind}: the driver's libraries were injected at {', '.join(hidden)}, which the dynamic loader"
            " does not search (not on LD_LIBRARY_PATH, no ldconfig after the mount): NVML and CUDA cannot"
            " load",
            f"set LD_LIBRARY_PATH={':'.join(UNCACHED_LIB_DIRS[::-1])} and add /usr/local/nvidia/bin to PATH"
            " in the container (as NVIDIA's CUDA images and this project's image do); the GKE device plugin"
            " mounts the driver there without running ldconfig",
            {"loader_path": list(facts.loader_path or ())},
        )
    missing_uvm = facts.gpu_nodes and "/dev/nvidia-uvm" not in facts.control_nodes
    summary = f"{kind} with GPU access: {len(facts.gpu_nodes) or 'WSL'} device(s), driver libraries injected"
    if missing_uvm:
        return warned(
            f"{summary}, but no /dev/nvidia-uvm (CUDA needs it)",
            "start the container through the NVIDIA runtime (`--gpus all`), which passes /dev/nvidia-uvm too",
        )
    return passed(summary)


def _denied(kind: str, denied: tuple[NodeAccess, ...], creds: Credentials) -> Outcome:
    """Device nodes this non-root process may not open: the driver's NVreg_DeviceFileMode (0660 with a video /
    render group) or rootless podman dropping the user's groups. --gpus is already there; the group is not."""
    first = denied[0]
    gids = sorted({node.gid for node in denied})
    return failed(
        ExitCode.CONTAINER_NO_GPU,
        f"{kind}: {', '.join(n.path for n in denied)} {'is' if len(denied) == 1 else 'are'} mode"
        f" {first.mode:04o}, group {', '.join(map(str, gids))}, and this process (uid {creds.uid}, groups"
        f" {', '.join(map(str, creds.gids)) or 'none'}) may not open them read-write",
        f"add the device nodes' group: `docker run --group-add {gids[0]}` (rootless podman:"
        f" `--group-add keep-groups`; Kubernetes: securityContext.supplementalGroups: [{gids[0]}]), or load"
        " the driver with NVreg_DeviceFileMode=0666",
        {"denied": [{"path": n.path, "mode": f"{n.mode:04o}", "gid": n.gid} for n in denied]},
    )


def _wsl(facts: RuntimeFacts) -> Outcome:
    wsl = facts.wsl
    assert wsl is not None
    if wsl.version == 1:
        return failed(
            ExitCode.WSL2_PASSTHROUGH,
            f"WSL1 ({wsl.kernel}) has no GPU support",
            "convert the distribution to WSL2 (`wsl --set-version <distro> 2` in PowerShell); then"
            f" {fixes.WSL}",
        )
    if not wsl.dxg:
        return failed(
            ExitCode.WSL2_PASSTHROUGH,
            "WSL2 without /dev/dxg: GPU paravirtualization is not available to this distribution",
            f"{fixes.WSL} (GPU support needs Windows 11 or Windows 10 21H2 or later)",
        )
    if not wsl.libcuda:
        return failed(
            ExitCode.WSL2_PASSTHROUGH,
            "WSL2 without /usr/lib/wsl/lib/libcuda.so.1: the Windows NVIDIA driver's libraries are missing",
            fixes.WSL,
        )
    if wsl.shadowing_libcuda:
        return failed(
            ExitCode.WSL2_PASSTHROUGH,
            "a Linux NVIDIA driver inside WSL2 shadows the Windows driver:"
            f" {', '.join(wsl.shadowing_libcuda)}",
            "remove the Linux driver packages inside WSL (e.g. `sudo apt-get remove --purge 'libnvidia-*'"
            " 'nvidia-driver-*'`) and keep only a CUDA toolkit for WSL; never install a Linux NVIDIA driver"
            " inside WSL",
        )
    where = f"; nvidia-smi is {wsl.nvidia_smi} (often not on PATH)" if wsl.nvidia_smi else ""
    return passed(f"WSL2 GPU passthrough: /dev/dxg and the Windows driver's /usr/lib/wsl/lib{where}")


CHECKS = (
    Check("runtime.environment", Layer.RUNTIME, check_environment),
    Check("runtime.gpu_access", Layer.RUNTIME, check_gpu_access, requires=("runtime.environment",)),
)
