"""What every check receives: the settings, the injected environment and probes, and the shared facts."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tfdist_validate.cluster.tf_config import ClusterConfig
from tfdist_validate.facts import Facts
from tfdist_validate.probes import Probes
from tfdist_validate.progress import Progress
from tfdist_validate.settings import Settings
from tfdist_validate.tfsession import OneShotSession, TensorFlowSession


@dataclass(frozen=True)
class Deadline:
    """The whole-run watchdog's end, on the monotonic clock."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())


@dataclass
class Context:
    settings: Settings
    command: str  # "run" or "check"
    env: Mapping[str, str]
    deadline: Deadline
    probes: Probes = field(default_factory=Probes)
    # what the layers learned, typed (facts.py): each layer fills its part, later layers read it
    facts: Facts = field(default_factory=Facts)
    # the report's sections that checks fill in as they learn things: "host", "tensorflow", "smoke", ...
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the multi-worker cluster TF_CONFIG names; None for single-host validation
    cluster: ClusterConfig | None = None
    # where the reference document's lines (visible_gpus=, Epoch ...) go; stderr when the JSON is on stdout
    out: TextIO = field(default_factory=lambda: sys.stdout)
    # what runs now, for the heartbeat; a check that blocks for minutes can name its finer stage here
    progress: Progress = field(default_factory=Progress)
    # called before a line goes to `out`: erases the heartbeat's status line where both share a terminal
    clear_status: Callable[[], None] = lambda: None
    # the run's TensorFlow process(es), tfsession.py; by default a one-shot session under `env`
    tf: TensorFlowSession = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.tf is None:
            self.tf = OneShotSession(self.env, self.out, self.clear_status)

    @property
    def root(self) -> Path:
        return Path(self.settings.root)

    def section(self, name: str) -> dict[str, Any]:
        return self.sections.setdefault(name, {})

    @property
    def dry_run(self) -> bool:
        return self.settings.cpu_replicas is not None
