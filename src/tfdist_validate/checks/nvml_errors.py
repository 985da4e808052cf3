"""What an NVML error means on this kind of host: one table, read top to bottom, first match wins.

The same "Unknown Error" means "the container lost its GPUs after a systemd reload" in a container and "look
at dmesg" on a host, and a missing libnvidia-ml.so.1 means "not injected" in a container, "broken
passthrough" under WSL2 and "driver not installed" on a bare host.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from tfdist_validate.checks import fixes
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.host.runtime import RuntimeFacts


class Where(enum.Enum):
    ANY = "any"
    CONTAINER = "container"
    HOST = "host"  # not in a container (a bare host, a VM, WSL2 itself)
    WSL2 = "wsl2"  # WSL2, not inside a container there


def _where(facts: RuntimeFacts | None) -> set[Where]:
    container = facts is not None and facts.in_container
    found = {Where.ANY, Where.CONTAINER if container else Where.HOST}
    if facts is not None and facts.wsl2 and not container:
        found.add(Where.WSL2)
    return found


Fix = str | Callable[[RuntimeFacts | None], str]


@dataclass(frozen=True)
class Rule:
    kinds: frozenset[str]  # ProbeError kinds (probes/nvml.py ERROR_KINDS, nvidia-smi's); empty: any kind
    where: Where
    code: ExitCode
    summary: str  # after "NVML: <message>: "; empty: the message alone
    fix: Fix


def _container_fix(facts: RuntimeFacts | None) -> str:
    return fixes.container(facts) + fixes.driver_capabilities_note(facts) if facts else fixes.DOCKER


def _on_the_host(facts: RuntimeFacts | None) -> str:
    return ("on the host (containers share its kernel driver): " if facts and facts.in_container else "") + (
        fixes.HOST_DRIVER
    )


_MISMATCH_FIX = (
    "the driver was upgraded without a reboot: reboot (or unload and reload the nvidia kernel modules)"
)


def _kinds(*names: str) -> frozenset[str]:
    return frozenset(names)


RULES: tuple[Rule, ...] = (
    Rule(
        _kinds("library_not_found", "driver_not_loaded", "unknown"),
        Where.WSL2,
        ExitCode.WSL2_PASSTHROUGH,
        "WSL2's GPU passthrough does not work",
        fixes.WSL,
    ),
    Rule(
        _kinds("library_not_found"),
        Where.CONTAINER,
        ExitCode.CONTAINER_NO_GPU,
        "libnvidia-ml.so.1 was not injected into this container",
        _container_fix,
    ),
    Rule(
        _kinds("library_not_found"),
        Where.HOST,
        ExitCode.NO_DRIVER,
        "the driver's user-space library libnvidia-ml.so.1 is not installed",
        "reinstall the NVIDIA driver package that matches the loaded kernel module; " + fixes.HOST_DRIVER,
    ),
    Rule(
        _kinds("driver_not_loaded"),
        Where.ANY,
        ExitCode.NO_DRIVER,
        "the NVIDIA kernel module is not loaded",
        _on_the_host,
    ),
    Rule(
        _kinds("no_permission"),
        Where.CONTAINER,
        ExitCode.CONTAINER_NO_GPU,
        "this container may not open the GPU device nodes",
        "let the NVIDIA runtime grant the devices (`--gpus all`, CDI, or the Kubernetes device plugin)"
        " instead of bind-mounting /dev/nvidia*",
    ),
    Rule(
        _kinds("no_permission"),
        Where.HOST,
        ExitCode.NO_DRIVER,
        "this user may not open /dev/nvidia*",
        "run as a user with access to /dev/nvidia* (the driver's default mode is 0666; check the"
        " NVreg_DeviceFileMode/NVreg_DeviceFileGID module options and the video group)",
    ),
    Rule(
        _kinds("unknown"),
        Where.CONTAINER,
        ExitCode.CONTAINER_NO_GPU,
        "the container lost access to its GPUs (typically after `systemctl daemon-reload` on the host;"
        " NVIDIA/nvidia-container-toolkit#48)",
        "recreate the container or pod; to stop it recurring, run `sudo nvidia-ctk system"
        " create-dev-char-symlinks --create-all` on the host (see the toolkit's troubleshooting page) or use"
        " the cgroupfs cgroup driver",
    ),
    Rule(
        _kinds("version_mismatch"),
        Where.CONTAINER,
        ExitCode.NO_DRIVER,
        "the host's NVIDIA kernel module and user-space libraries are different versions",
        _MISMATCH_FIX,
    ),
    Rule(
        _kinds("version_mismatch"),
        Where.ANY,
        ExitCode.NO_DRIVER,
        "the NVIDIA kernel module and user-space libraries are different versions",
        _MISMATCH_FIX,
    ),
    Rule(
        frozenset(),
        Where.ANY,
        ExitCode.NO_DRIVER,
        "",
        "run `nvidia-smi` and `sudo dmesg | grep -i -e nvrm -e xid`; a reboot clears most driver faults",
    ),
)


def classify(kind: str, message: str, facts: RuntimeFacts | None) -> tuple[ExitCode, str, str]:
    """(exit code, summary, fix) for an NVML error of `kind` on this kind of host."""
    here = _where(facts)
    rule = next(r for r in RULES if (not r.kinds or kind in r.kinds) and r.where in here)
    nvml = f"NVML: {message}"
    summary = f"{nvml}: {rule.summary}" if rule.summary else nvml
    fix = rule.fix(facts) if callable(rule.fix) else rule.fix
    return rule.code, summary, fix


def gpu_error(error: str, facts: RuntimeFacts | None) -> tuple[bool, str, str]:
    """(counts against health, what it means, the fix) for an error on one GPU's handle (`Gpu.error`, which
    starts with pynvml's class name). Only NVML_ERROR_GPU_IS_LOST says the GPU fell off the bus; in a
    container "No Permission" is a GPU NVML lists but this container was not given, and "Unknown Error" the
    container losing its device access (NVIDIA/nvidia-container-toolkit#48, #69), neither fixed by a reset."""
    container = facts is not None and facts.in_container
    if error.startswith("NVMLError_GpuIsLost"):
        return (
            True,
            "is lost",
            "a lost GPU needs a reset (`nvidia-smi -r`) or a reboot; see `dmesg | grep -i xid`",
        )
    if error.startswith("NVMLError_NoPermission") and container:
        return (
            False,
            "is not this container's GPU (No Permission on its handle)",
            "nothing to fix if the container was meant to get only its own GPUs; otherwise ask for more",
        )
    if error.startswith("NVMLError_NoPermission"):
        return (
            True,
            "may not be opened by this user",
            "check the device node's mode and group (`ls -l /dev/nvidia*`)",
        )
    if error.startswith("NVMLError_Unknown") and container:
        return True, "lost its device access in this container", _RECREATE
    return True, "does not answer", "run `nvidia-smi` and `sudo dmesg | grep -i -e nvrm -e xid`"


_RECREATE = (
    "recreate the container or pod (a `systemctl daemon-reload` on the host revokes its device access;"
    " NVIDIA/nvidia-container-toolkit#48)"
)
