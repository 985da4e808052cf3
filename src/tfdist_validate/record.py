"""What the probes answered during a run, kept so that `replay` can decide the verdict again.

A run records, at the probe boundary, every answer a check decides from: the runtime facts read under
--root, NVML's raw answer (or that it never answered), every nvidia-smi command and its output, TensorFlow's
facts (with the log they are read from) and, for `run`, what the smoke-test child left (its results file,
its log, how it ended). The report carries this as its `facts` block; `replay` (replay.py) answers the same
questions from it. Each record is serialised from its own dataclass (codec.py), so the shape is declared once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdist_validate.codec import dump, load
from tfdist_validate.host import collective_env
from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes import Probes
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.probes.tf_facts import TfFacts
from tfdist_validate.smoke.process import read_tail
from tfdist_validate.smoke.spec import ChildSpec
from tfdist_validate.tfsession import SmokeChild, TensorFlowSession

# The `facts` block's own version: a reader refuses a newer major (replay's exit 2), reads any older minor.
FORMAT = 1
SMOKE_LOG_BYTES = 64 * 1024  # enough for `diagnose` to name a cause; a verbose log reaches gigabytes


@dataclass(frozen=True)
class SmokeRecord:
    """How the smoke-test child ended and what it left: the smoke checks judge exactly this."""

    pid: int | None
    returncode: int | None
    timed_out: bool
    duration_s: float
    leftover_pids: tuple[int, ...]
    output: tuple[str, ...]  # the last lines it printed
    results: str  # its results file (one JSON object per line), verbatim
    log: str  # the tail of its TensorFlow log


# The variables besides TF_CONFIG that a verdict is decided from, recorded as set and restored by replay.
CUDA_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
# ...and those the report lists as changing the run's collectives (host/collective_env.py), kept beside them
RECORDED_ENV = CUDA_ENV + collective_env.NAMES


@dataclass
class Recording:
    runtime: RuntimeFacts | None = None
    nvml_asked: bool = False
    nvml: DriverSnapshot | None = None  # None after nvml_asked: it did not answer in time
    commands: list[CommandResult] = field(default_factory=list)
    tensorflow: TfFacts | None = None
    smoke: SmokeRecord | None = None
    tf_config: str | None = None  # TF_CONFIG as set: it decides single host or multi-worker
    # CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER as set: they decide which GPUs the run uses (host/visible.py);
    # RECORDED_ENV's others as set (older reports lack them)
    cuda_env: dict[str, str] = field(default_factory=dict)
    smoke_child: SmokeChild | None = field(default=None, repr=False)  # read into `smoke` at the end

    def to_json(self) -> dict[str, Any]:
        smoke = self.smoke or (_read_child(self.smoke_child) if self.smoke_child else None)
        return {
            "format": FORMAT,
            "runtime": dump(self.runtime),
            "nvml": {"asked": self.nvml_asked, "answer": dump(self.nvml)},
            "commands": dump(self.commands),
            "tensorflow": None if self.tensorflow is None else dump(self.tensorflow),
            "smoke": dump(smoke),
            "tf_config": self.tf_config,
            "cuda_env": dict(self.cuda_env),
        }

    @classmethod
    def from_json(cls, data: Any) -> Recording:
        """Raises ValueError / TypeError / KeyError for a block this version cannot read."""
        if not isinstance(data, Mapping):
            raise ValueError("facts: not an object")
        version = data.get("format")
        if not isinstance(version, int) or version > FORMAT:
            raise ValueError(f"facts: format {version!r}; this version reads format {FORMAT} and older")
        nvml = data.get("nvml") or {}
        return cls(
            runtime=load(RuntimeFacts | None, data.get("runtime")),
            nvml_asked=bool(nvml.get("asked")),
            nvml=load(DriverSnapshot | None, nvml.get("answer")),
            commands=list(load(tuple[CommandResult, ...], data.get("commands") or [])),
            tensorflow=load(TfFacts | None, data.get("tensorflow")),
            smoke=load(SmokeRecord | None, data.get("smoke")),
            tf_config=load(str | None, data.get("tf_config")),
            cuda_env={str(k): str(v) for k, v in (data.get("cuda_env") or {}).items()},
        )


def _read_child(child: SmokeChild) -> SmokeRecord:
    process = child.process
    try:
        results = child.results_path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # the child never wrote one
        results = ""
    return SmokeRecord(
        pid=process.pid,
        returncode=process.returncode,
        timed_out=process.timed_out,
        duration_s=round(process.duration_s, 3),
        leftover_pids=tuple(process.leftover_pids),
        output=tuple(process.relay.kept),
        results=results,
        log=read_tail(child.log_path, SMOKE_LOG_BYTES),
    )


# ---------------------------------------------------------------- recording a live run


@dataclass(frozen=True)
class RecordingProbes(Probes):
    """`inner`'s answers, each also written into `recording` (build it with recording_probes)."""

    inner: Probes = field(default_factory=Probes)
    recording: Recording = field(default_factory=Recording)

    def ask_nvml(self, timeout_s: float) -> DriverSnapshot | None:
        answer = self.inner.ask_nvml(timeout_s)  # a replay's probes answer from their record, not from NVML
        self.recording.nvml_asked = True
        self.recording.nvml = answer
        return answer


def recording_probes(probes: Probes, recording: Recording) -> RecordingProbes:
    def run_command(argv: Sequence[str], timeout_s: float) -> CommandResult:
        result = probes.run_command(argv, timeout_s)
        recording.commands.append(result)
        return result

    def runtime(root: Path, env: Mapping[str, str]) -> RuntimeFacts:
        facts = probes.runtime(root, env)
        recording.runtime = facts
        return facts

    return RecordingProbes(run_command, probes.nvml, runtime, inner=probes, recording=recording)


class RecordingSession:
    """A TensorFlow session whose facts and smoke child are also written into `recording`."""

    def __init__(self, inner: TensorFlowSession, recording: Recording) -> None:
        self.inner = inner
        self.recording = recording

    def start(self) -> None:
        self.inner.start()

    def facts(self, timeout_s: float, list_gpus: bool = True) -> TfFacts:
        facts = self.inner.facts(timeout_s, list_gpus)
        self.recording.tensorflow = facts
        return facts

    def start_smoke(self, spec: ChildSpec) -> SmokeChild:
        child = self.inner.start_smoke(spec)
        self.recording.smoke_child = child
        return child

    def kill(self) -> None:
        self.inner.kill()

    def close(self) -> None:
        self.inner.close()
