"""The contract's exit codes: stable, add only, never renumber (../shared/CONTRACT.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL_ERROR = 1
    USAGE = 2
    NO_DRIVER = 10
    CONTAINER_NO_GPU = 11
    WSL2_PASSTHROUGH = 12
    DRIVER_TOO_OLD = 13
    FABRIC_NOT_READY = 14
    TF_IMPORT_FAILED = 20
    TF_NOT_CUDA_BUILD = 21
    TF_NO_GPU = 22
    UNSUPPORTED_GPU = 23
    TOO_FEW_GPUS = 30
    GPU_UNHEALTHY = 31
    COLLECTIVE_FAILED = 40
    TRAINING_FAILED = 41
    RESULT_MISMATCH = 42
    PERF_BELOW_FLOOR = 43
    TIMEOUT = 50


@dataclass(frozen=True)
class ExitCodeInfo:
    code: ExitCode
    meaning: str

    @property
    def name(self) -> str:
        return self.code.name


# Meanings are the contract's words, verbatim, so `exit-codes --json` can be compared with it.
_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "every required check passed",
    ExitCode.INTERNAL_ERROR: "a bug in the validator itself",
    ExitCode.USAGE: "bad arguments, config file or environment value",
    ExitCode.NO_DRIVER: "no NVIDIA driver reachable (no NVML, no device nodes) on a host or VM",
    ExitCode.CONTAINER_NO_GPU: (
        "inside a container that was started without GPU access (no `--gpus`, toolkit not configured,"
        " no device plugin / CDI device)"
    ),
    ExitCode.WSL2_PASSTHROUGH: "WSL2 detected and its GPU passthrough is broken or incomplete",
    ExitCode.DRIVER_TOO_OLD: "the driver supports an older CUDA than the TensorFlow build needs",
    ExitCode.FABRIC_NOT_READY: (
        "an NVSwitch system whose fabric is not initialised (nvidia-fabricmanager not running, or not the"
        " driver's version): CUDA fails with error 802"
    ),
    ExitCode.TF_IMPORT_FAILED: "TensorFlow cannot be imported",
    ExitCode.TF_NOT_CUDA_BUILD: "TensorFlow was built without CUDA",
    ExitCode.TF_NO_GPU: "the driver sees GPUs, TensorFlow does not (CUDA / cuDNN user-space libraries)",
    ExitCode.UNSUPPORTED_GPU: "a GPU's compute capability is not supported by this TensorFlow build",
    ExitCode.TOO_FEW_GPUS: "fewer usable GPUs / replicas than `--min-gpus`",
    ExitCode.GPU_UNHEALTHY: (
        "ECC errors, retired or pending pages, XID events, memory held by other processes, throttling"
    ),
    ExitCode.COLLECTIVE_FAILED: "the strategy could not be created or a cross-replica all-reduce failed",
    ExitCode.TRAINING_FAILED: "`model.fit` raised (out of memory included)",
    ExitCode.RESULT_MISMATCH: "accuracy below the floor, replicas out of sync, or a wrong all-reduce result",
    ExitCode.PERF_BELOW_FLOOR: "measured all-reduce bandwidth or scaling below a configured floor",
    ExitCode.TIMEOUT: (
        "the watchdog fired, a deadline cut any stage short (the TensorFlow import included), or the run was"
        " stopped by SIGTERM / SIGINT / SIGHUP before its verdict"
    ),
}

TABLE: tuple[ExitCodeInfo, ...] = tuple(ExitCodeInfo(code, _MEANINGS[code]) for code in ExitCode)


def as_json_list() -> list[dict[str, object]]:
    return [{"code": int(info.code), "name": info.name, "meaning": info.meaning} for info in TABLE]


def as_text_table() -> str:
    width = max(len(info.name) for info in TABLE)
    lines = [f"{'code':>4}  {'name':<{width}}  meaning"]
    lines += [f"{int(info.code):>4}  {info.name:<{width}}  {info.meaning}" for info in TABLE]
    return "\n".join(lines)
