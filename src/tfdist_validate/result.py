"""The result model: one immutable record per check, and the outcome a check function returns."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tfdist_validate.exitcodes import ExitCode


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    CRASH = "crash"


class Layer(enum.IntEnum):
    """The stack from the bottom up. The order is what "most fundamental" means for the verdict."""

    RUNTIME = 10  # container / WSL2 / Kubernetes / toolkit injection
    DRIVER = 20  # NVML
    HEALTH = 30  # ECC, retired pages, other processes, throttling
    TENSORFLOW = 40  # import, CUDA build, TensorFlow's view of the GPUs
    DEVICES = 50  # how many usable replicas
    CLUSTER = 55  # multi-worker: TF_CONFIG and peers
    STRATEGY = 60  # the distribution strategy and its collectives
    TRAINING = 70  # model.fit
    RESULTS = 80  # accuracy, replicas in sync, exact all-reduce
    PERFORMANCE = 90  # bandwidth floors

    @property
    def label(self) -> str:
        return self.name.lower()


# The layer of the check that finds each cause, for ranking causes when only codes are known (`diagnose`
# reads a log, not a run): then "most fundamental" means what it means for `run`, where verdict.py ranks the
# failing checks' own layers. TIMEOUT and INTERNAL_ERROR can come from any layer and rank last.
LAYER_OF_CODE: dict[ExitCode, Layer] = {
    ExitCode.NO_DRIVER: Layer.DRIVER,
    ExitCode.CONTAINER_NO_GPU: Layer.RUNTIME,
    ExitCode.WSL2_PASSTHROUGH: Layer.RUNTIME,
    ExitCode.DRIVER_TOO_OLD: Layer.TENSORFLOW,  # run compares the driver with the TensorFlow build there
    ExitCode.FABRIC_NOT_READY: Layer.DRIVER,
    ExitCode.TF_IMPORT_FAILED: Layer.TENSORFLOW,
    ExitCode.TF_NOT_CUDA_BUILD: Layer.TENSORFLOW,
    ExitCode.TF_NO_GPU: Layer.TENSORFLOW,
    ExitCode.UNSUPPORTED_GPU: Layer.TENSORFLOW,
    ExitCode.TOO_FEW_GPUS: Layer.DEVICES,
    ExitCode.GPU_UNHEALTHY: Layer.HEALTH,
    ExitCode.COLLECTIVE_FAILED: Layer.STRATEGY,
    ExitCode.TRAINING_FAILED: Layer.TRAINING,
    ExitCode.RESULT_MISMATCH: Layer.RESULTS,
    ExitCode.PERF_BELOW_FLOOR: Layer.PERFORMANCE,
}


def _frozen(details: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(details or {}))


@dataclass(frozen=True)
class Outcome:
    """What a check function returns; the runner adds identity and timing."""

    status: Status
    summary: str
    code: ExitCode = ExitCode.OK
    hint: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", _frozen(self.details))
        if self.status is Status.FAIL and self.code is ExitCode.OK:
            raise ValueError(f"a failing outcome needs an exit code: {self.summary!r}")


def passed(summary: str, details: Mapping[str, Any] | None = None) -> Outcome:
    return Outcome(Status.PASS, summary, details=_frozen(details))


def warned(summary: str, hint: str = "", details: Mapping[str, Any] | None = None) -> Outcome:
    return Outcome(Status.WARN, summary, hint=hint, details=_frozen(details))


def failed(code: ExitCode, summary: str, hint: str = "", details: Mapping[str, Any] | None = None) -> Outcome:
    return Outcome(Status.FAIL, summary, code=code, hint=hint, details=_frozen(details))


def skipped(summary: str, details: Mapping[str, Any] | None = None) -> Outcome:
    return Outcome(Status.SKIP, summary, details=_frozen(details))


@dataclass(frozen=True)
class CheckResult:
    id: str
    layer: Layer
    status: Status
    code: ExitCode
    summary: str
    hint: str
    details: Mapping[str, Any]
    duration_s: float
    blocked_by: str | None = None  # set when skipped because a required check did not pass

    @classmethod
    def from_outcome(cls, check_id: str, layer: Layer, outcome: Outcome, duration_s: float) -> CheckResult:
        return cls(
            id=check_id,
            layer=layer,
            status=outcome.status,
            code=outcome.code,
            summary=outcome.summary,
            hint=outcome.hint,
            details=outcome.details,
            duration_s=duration_s,
        )

    @property
    def blocks_dependents(self) -> bool:
        """Failed, crashed, or not run because something below it failed. A skip that only means
        "not applicable here" (a GPU layer in a --cpu-replicas dry run) does not block."""
        return self.status in (Status.FAIL, Status.CRASH) or self.blocked_by is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "layer": self.layer.label,
            "status": self.status.value,
            "code": int(self.code),
            "summary": self.summary,
            "hint": self.hint,
            "duration_s": round(self.duration_s, 4),
            "details": _plain(self.details),
            "blocked_by": self.blocked_by,
        }


def _plain(value: Any) -> Any:
    """Turn the read-only mappings used inside results back into JSON-ready dicts."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value
