"""The probe layer: the only code that touches pynvml, TensorFlow and external commands.

Everything above it receives a `Probes` object, so tests can inject recorded real outputs at this boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfdist_validate.probes.commands import CommandRunner, run_command


@dataclass(frozen=True)
class Probes:
    run_command: CommandRunner = field(default=run_command)
