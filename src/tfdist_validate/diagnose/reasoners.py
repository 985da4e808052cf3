"""The whole-log reasoners, in one place: the facts each collects while the log streams past, and the order in
which they decide once it has been read.

A line signature names a cause by itself; these weigh facts from anywhere in the log together:
- capability.py (23): a GPU the log names or a capability it states, against what the build supports;
- driver_cuda.py (13): the driver version a log prints, against the oldest that runs the build's CUDA;
- selfreport.py (21 / 22): what users paste about TensorFlow itself (version, package, GPU answer, platform);
- memory_held.py (31 over 41): whose memory it was when the GPU ran out;
- cudart_only.py (22, or 0 on a CPU machine): a missing CUDA runtime that TensorFlow itself calls ignorable.
Every fact line they read is a capability.Fact (or a subclass) found by the same one-pass scan as the table's
entries, so a new reasoner costs no second pass; `record` hands each to its collector by the fact's class.
The first two give verdicts that signatures with a `reasoner:` key report (`verdicts`); the self-report adds,
re-codes and explains findings once the line findings exist (`conclude`), and the memory reasoner re-reads an
out-of-memory finding last (`reread`), after the user's words have been weighed, as the cudart reading
names its harmless alternative then.
"""

from __future__ import annotations

from collections.abc import Mapping

from tfdist_validate.diagnose import capability, cudart_only, driver_cuda, memory_held, selfreport
from tfdist_validate.diagnose.capability import CapabilityFacts, Verdict
from tfdist_validate.diagnose.driver_cuda import DriverFact, DriverFacts
from tfdist_validate.diagnose.findings import Finding, Line
from tfdist_validate.diagnose.memory_held import MemoryFact, MemoryFacts
from tfdist_validate.diagnose.selfreport import SelfReport
from tfdist_validate.diagnose.signatures import Table

Version = tuple[int, int]


def facts() -> tuple[capability.Fact, ...]:
    """Every fact line any reasoner reads, for the scan."""
    return (*capability.facts(), *driver_cuda.facts(), *memory_held.facts())


class Reasoners:
    """The facts of one log, kept small, and the reasoners' conclusions over them at its end."""

    def __init__(self) -> None:
        self.report = SelfReport()  # package and build facts: fed by the table's `facts:` and `versions:`
        self.capability = CapabilityFacts()  # GPUs, capabilities and trouble
        self.driver = DriverFacts()  # driver and CUDA versions
        self.memory = MemoryFacts()  # GPU memory others held
        self._collectors: dict[type[capability.Fact], CapabilityFacts | DriverFacts | MemoryFacts] = {
            capability.Fact: self.capability,
            DriverFact: self.driver,
            MemoryFact: self.memory,
        }

    def record(self, fact: capability.Fact, line: Line, value: object) -> None:
        self._collectors[type(fact)].add(fact, line, value)

    def verdicts(
        self, table: Table, failed: bool, contexts: set[str], tf_version: Version | None, tf_line: Line | None
    ) -> dict[str, Verdict]:
        """The verdicts of the reasoners a signature names (`reasoner:`), by that signature's id. A GPU
        outside the build explains kernel failures before an old driver does: the driver is judged only when
        the GPU is not; and where TensorFlow has no CUDA build at all (21) no GPU model matters."""
        gpu = self.capability.judge(tf_version, tf_line, failed)
        if selfreport.platform_without_cuda(contexts, tf_version):
            gpu = None
        driver = None if gpu else self.driver.judge(tf_version, tf_line, contexts, failed)
        by_reasoner = {"gpu-capability": gpu, "driver-cuda": driver}
        found = {sig.id: by_reasoner.get(sig.reasoner) for sig in table.signatures if sig.reasoner}
        return {sig_id: verdict for sig_id, verdict in found.items() if verdict is not None}

    def conclude(
        self,
        findings: list[Finding],
        table: Table,
        evidence: Mapping[str, list[Line]],
        tf_version: Version | None,
        tf_line: Line | None,
    ) -> None:
        """The self-report's findings and explanations (selfreport.conclude)."""
        selfreport.conclude(self.report, findings, table, evidence, tf_version, tf_line)

    def reread(self, findings: list[Finding]) -> None:
        """An out-of-memory finding re-read as a GPU held by others (memory_held.py); a cudart-only finding
        with its harmless reading named (cudart_only.py)."""
        self.memory.reread(findings)
        cudart_only.explain(findings)
