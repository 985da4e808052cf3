"""The probe layer: the only code that touches pynvml, TensorFlow and external commands.

Everything above it receives a `Probes` object, so tests can inject recorded real outputs at this boundary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tfdist_validate.probes.commands import CommandRunner, run_command
from tfdist_validate.probes.nvml import NvmlProbe
from tfdist_validate.probes.nvml import collect as collect_nvml

if TYPE_CHECKING:
    from tfdist_validate.probes.tf_facts import TfFacts, TfFactsProbe
    from tfdist_validate.smoke.shared import SharedChild


def collect_tf_facts(env: Mapping[str, str], timeout_s: float) -> TfFacts:
    # imported here so that `python -m tfdist_validate.probes.tf_facts` (the child) is not imported twice
    from tfdist_validate.probes import tf_facts

    return tf_facts.collect(env, timeout_s)


@dataclass(frozen=True)
class Probes:
    run_command: CommandRunner = field(default=run_command)
    # one NVML session -> DriverSnapshot (pynvml imported lazily, inside the call)
    nvml: NvmlProbe = field(default=collect_nvml)
    # TensorFlow's facts from a child process: (env, timeout_s) -> TfFacts
    tf_facts: TfFactsProbe = field(default=collect_tf_facts)
    # `run`: the one TensorFlow process, started with the run, that answers tf_facts and then runs the smoke
    # test (smoke/shared.py); None: the facts probe and the smoke test each start their own
    tf_child: SharedChild | None = None
