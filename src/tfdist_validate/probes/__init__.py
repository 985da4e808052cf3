"""The probe layer: the only code that touches pynvml, TensorFlow and external commands.

Everything above it receives a `Probes` object, so tests can inject recorded real outputs at this boundary,
and `replay` answers every question from a report's recorded facts (record.py).
TensorFlow runs in child processes: `tf_facts` is the one-shot facts child; tfsession.py owns every child.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.host.runtime import RuntimeFacts, read_runtime
from tfdist_validate.probes.commands import CommandRunner, run_command
from tfdist_validate.probes.nvml import NvmlProbe, collect as collect_nvml, within

# (--root, the process environment) -> what kind of machine this is; reads only files under the root
RuntimeProbe = Callable[[Path, Mapping[str, str]], RuntimeFacts]


@dataclass(frozen=True)
class Probes:
    run_command: CommandRunner = field(default=run_command)
    # one NVML session -> DriverSnapshot (pynvml imported lazily, inside the call)
    nvml: NvmlProbe = field(default=collect_nvml)
    runtime: RuntimeProbe = field(default=read_runtime)

    def ask_nvml(self, timeout_s: float) -> DriverSnapshot | None:
        """NVML's answer under its deadline; None: it did not answer in time (nvml.within)."""
        return within(self.nvml, timeout_s)
