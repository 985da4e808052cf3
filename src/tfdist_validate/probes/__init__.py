"""The probe layer: the only code that touches pynvml, TensorFlow and external commands.

Everything above it receives a `Probes` object, so tests can inject recorded real outputs at this boundary.
TensorFlow runs in child processes: `tf_facts` is the one-shot facts child; tfsession.py owns every child.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfdist_validate.probes.commands import CommandRunner, run_command
from tfdist_validate.probes.nvml import NvmlProbe
from tfdist_validate.probes.nvml import collect as collect_nvml


@dataclass(frozen=True)
class Probes:
    run_command: CommandRunner = field(default=run_command)
    # one NVML session -> DriverSnapshot (pynvml imported lazily, inside the call)
    nvml: NvmlProbe = field(default=collect_nvml)
