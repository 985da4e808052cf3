"""Run checks in layer order: gate dependents on failures, turn exceptions into `crash` results, time each."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tfdist_validate.context import Context
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import CheckResult, Layer, Outcome, Status

DRY_RUN = "the GPU layers are not checked in a --cpu-replicas dry run"


@dataclass(frozen=True)
class Check:
    id: str
    layer: Layer
    run: Callable[[Context], Outcome]
    # ids of earlier checks that must not have failed, crashed or been blocked
    requires: tuple[str, ...] = ()
    # about the GPUs only: a --cpu-replicas dry run skips it, and says so
    gpu_only: bool = False


def validate_pipeline(checks: Sequence[Check]) -> None:
    """Catch wiring mistakes in tests: requirements must name earlier checks; layers never go down."""
    seen: set[str] = set()
    last_layer = min(Layer)
    for check in checks:
        if check.id in seen:
            raise ValueError(f"check {check.id!r} is listed twice")
        missing = [r for r in check.requires if r not in seen]
        if missing:
            raise ValueError(f"check {check.id!r} requires {missing}, which do not run before it")
        if check.layer < last_layer:
            raise ValueError(f"check {check.id!r} ({check.layer.label}) runs after a higher layer")
        seen.add(check.id)
        last_layer = check.layer


def _crash(error: BaseException) -> Outcome:
    return Outcome(
        Status.CRASH,
        f"the check itself crashed: {type(error).__name__}: {error}",
        code=ExitCode.INTERNAL_ERROR,
        hint="this is a bug in tfdist-validate: report it with the file `tfdist-validate bundle` writes",
        details={"traceback": traceback.format_exception(error)},
    )


def run_check(check: Check, ctx: Context, clock: Callable[[], float] = time.monotonic) -> CheckResult:
    started = clock()
    try:
        outcome = check.run(ctx)
    except Exception as error:  # a crashing check is a result, and the run goes on (STYLE.md, practice 1)
        outcome = _crash(error)
    return CheckResult.from_outcome(check.id, check.layer, outcome, clock() - started)


def run_checks(
    checks: Sequence[Check],
    ctx: Context,
    *,
    on_start: Callable[[Check], None] = lambda _check: None,
    on_result: Callable[[CheckResult], None] = lambda _result: None,
    clock: Callable[[], float] = time.monotonic,
) -> list[CheckResult]:
    validate_pipeline(checks)
    results: dict[str, CheckResult] = {}
    for check in checks:
        blocker = next((results[r] for r in check.requires if results[r].blocks_dependents), None)
        if blocker is not None:
            result = CheckResult.from_outcome(
                check.id,
                check.layer,
                Outcome(Status.SKIP, f"not run: needs {blocker.id}, which {_did(blocker)}"),
                0.0,
            )
            result = replace(result, blocked_by=blocker.id)
        elif check.gpu_only and ctx.dry_run:
            result = CheckResult.from_outcome(check.id, check.layer, Outcome(Status.SKIP, DRY_RUN), 0.0)
        else:
            on_start(check)
            result = run_check(check, ctx, clock)
        results[check.id] = result
        on_result(result)
    return list(results.values())


def _did(result: CheckResult) -> str:
    if result.blocked_by is not None:
        return f"was not run either (because of {result.blocked_by})"
    return {Status.FAIL: "failed", Status.CRASH: "crashed"}.get(result.status, result.status.value)
