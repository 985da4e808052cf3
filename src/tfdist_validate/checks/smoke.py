"""The smoke-test checks: one child run per validation (smoke/run.py), judged by eight checks
(checks/smoke_verdicts.py); a failure is explained from the child's log (diagnose) and, across workers, by
which peer could not be reached.

`checks()` is a factory rather than a CHECKS tuple: the checks of one pipeline share one child run, and a
fresh pipeline must start a fresh one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar, cast

from tfdist_validate.checks import smoke_probes, smoke_verdicts as verdicts
from tfdist_validate.cluster import peers
from tfdist_validate.context import Context
from tfdist_validate.diagnose import Diagnosis, diagnose_file
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Layer, Outcome, Status
from tfdist_validate.runner import Check
from tfdist_validate.smoke.run import SmokeRun, run_smoke

# The check that judges each of the child's stages: while the child runs (inside smoke.strategy, the first
# check), the heartbeat names the stage by its check, so `smoke.training` is what is slow, not the strategy.
CHECK_OF_STAGE = {
    "strategy": "smoke.strategy",
    "fit": "smoke.training",
    "sync": "smoke.replicas_in_sync",
    "conv": "smoke.convolution",
    "prefetch": "smoke.device_input",
    "allreduce": "smoke.allreduce_exact",
    "bandwidth": "smoke.allreduce_bandwidth",
}
# failures a missing or dead peer explains
_PEER_CODES = (ExitCode.TIMEOUT, ExitCode.COLLECTIVE_FAILED, ExitCode.TRAINING_FAILED)


Record = TypeVar("Record")  # one of smoke/records.py's stage records


class _SmokeTest:
    """The child runs once, in the first check that needs it; the others judge its results."""

    def __init__(self) -> None:
        self._run: SmokeRun | None = None
        self._peers: list[peers.PeerState] | None = None
        self._diagnosis: Diagnosis | None = None

    def run(self, ctx: Context) -> SmokeRun:
        if self._run is None:
            self._run = run_smoke(ctx, CHECK_OF_STAGE)
        return self._run

    def judge(
        self, stage: str, verdict: Callable[[Record, SmokeRun, Context], Outcome]
    ) -> Callable[[Context], Outcome]:
        """A check that judges `stage`'s record (smoke/records.py) with `verdict`, or its absence."""

        def check(ctx: Context) -> Outcome:
            run = self.run(ctx)
            found = run.results.get(stage)
            outcome = (
                verdict(cast(Record, found), run, ctx)
                if found is not None
                else verdicts.missing(stage, run, ctx)
            )
            return self._name_unreachable_peers(self._explain_from_log(outcome, run), ctx)

        return check

    def _explain_from_log(self, outcome: Outcome, run: SmokeRun) -> Outcome:
        """A failed smoke check: read the child's TensorFlow log with `diagnose`'s signatures."""
        if outcome.status is not Status.FAIL:
            return outcome
        if self._diagnosis is None:
            self._diagnosis = diagnose_file(run.log_path)
        causes = self._diagnosis.failures
        if not causes:
            # no known cause: the log's own failure-looking last lines, for whoever reads the report
            unknown = [line.to_json() for line in self._diagnosis.unrecognised]
            return (
                replace(outcome, details={**outcome.details, "log_unrecognised": unknown})
                if unknown
                else outcome
            )
        first = causes[0].signature
        # a cause inferred from a line's words (diagnose/layer_words.py) is told as such
        shows = "the log's words suggest" if causes[0].inferred else "the log shows"
        return replace(
            outcome,
            summary=f"{outcome.summary} ({shows}: {first.title})",
            hint=f"{first.fix.strip()} {outcome.hint}".strip(),
            details={**outcome.details, "diagnosis": [c.to_json() for c in causes[:3]]},
        )

    def _name_unreachable_peers(self, outcome: Outcome, ctx: Context) -> Outcome:
        """A multi-worker collective that failed or hung: say which peer could not be reached."""
        cluster = ctx.cluster
        if cluster is None or not cluster.is_multi_worker or outcome.code not in _PEER_CODES:
            return outcome
        if self._peers is None:
            self._peers = peers.probe_peers(cluster)
        details = {**outcome.details, "peers": [p.to_json() for p in self._peers]}
        down = peers.unreachable_text(self._peers)
        if not down:
            return replace(outcome, details=details)
        return replace(
            outcome,
            summary=f"{outcome.summary}; unreachable from {cluster.task_name}: {down}",
            hint=(
                "start every worker of the cluster together and check that each one's port is reachable"
                " from the others (headless Service, NetworkPolicy, firewall); TF_CONFIG must name the same"
                " cluster on every worker"
            ),
            details=details,
        )


def checks(requires: tuple[str, ...] = ()) -> list[Check]:
    """The smoke checks; `requires`: the host checks that must pass first (devices.count)."""
    smoke = _SmokeTest()
    return [
        Check(
            CHECK_OF_STAGE["strategy"], Layer.STRATEGY, smoke.judge("strategy", verdicts.strategy), requires
        ),
        Check(
            CHECK_OF_STAGE["fit"], Layer.TRAINING, smoke.judge("fit", verdicts.training), ("smoke.strategy",)
        ),
        Check(
            CHECK_OF_STAGE["conv"],
            Layer.TRAINING,
            smoke.judge("conv", smoke_probes.convolution),
            ("smoke.strategy",),
        ),
        Check(
            CHECK_OF_STAGE["prefetch"],
            Layer.TRAINING,
            smoke.judge("prefetch", smoke_probes.device_input),
            ("smoke.training",),
        ),
        Check(
            CHECK_OF_STAGE["sync"],
            Layer.RESULTS,
            smoke.judge("sync", verdicts.replicas_in_sync),
            ("smoke.training",),
        ),
        Check(
            CHECK_OF_STAGE["allreduce"],
            Layer.RESULTS,
            smoke.judge("allreduce", verdicts.allreduce_exact),
            ("smoke.strategy",),
        ),
        Check("smoke.accuracy", Layer.RESULTS, smoke.judge("fit", verdicts.accuracy), ("smoke.training",)),
        Check(
            CHECK_OF_STAGE["bandwidth"],
            Layer.PERFORMANCE,
            smoke.judge("bandwidth", verdicts.bandwidth),
            ("smoke.allreduce_exact",),
        ),
    ]
