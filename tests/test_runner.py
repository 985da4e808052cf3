"""The runner's gating and crash capture, and the single place that chooses the exit code. Table-driven."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tfdist_validate.context import Context, Deadline
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.result import Layer, Outcome, Status, failed, passed, skipped, warned
from tfdist_validate.runner import Check, run_checks, validate_pipeline
from tfdist_validate.settings import Settings
from tfdist_validate.verdict import decide

E = ExitCode


def ctx() -> Context:
    return Context(Settings(), "check", {}, Deadline.after(60))


def boom(_ctx: Context) -> Outcome:
    raise RuntimeError("probe exploded")


def const(outcome: Outcome) -> Callable[[Context], Outcome]:
    return lambda _ctx: outcome


PASS = const(passed("fine"))
WARN = const(warned("meh", "look at it"))
NA = const(skipped("not applicable in a dry run"))


def fail(code: ExitCode) -> Callable[[Context], Outcome]:
    return const(failed(code, f"failed with {code.name}", f"fix {code.name}"))


def pipeline(*specs: tuple[str, Layer, Callable[[Context], Outcome], tuple[str, ...]]) -> list[Check]:
    return [Check(i, layer, fn, req) for i, layer, fn, req in specs]


L = Layer
CASES = {
    "all pass": (
        [("a", L.RUNTIME, PASS, ()), ("b", L.DRIVER, PASS, ("a",))],
        {"a": Status.PASS, "b": Status.PASS},
        E.OK,
    ),
    "warnings are still OK": (
        [("a", L.RUNTIME, WARN, ()), ("b", L.DRIVER, PASS, ("a",))],
        {"a": Status.WARN, "b": Status.PASS},
        E.OK,
    ),
    "failure skips its dependents, transitively": (
        [
            ("a", L.RUNTIME, fail(E.CONTAINER_NO_GPU), ()),
            ("b", L.DRIVER, PASS, ("a",)),
            ("c", L.HEALTH, PASS, ("b",)),
        ],
        {"a": Status.FAIL, "b": Status.SKIP, "c": Status.SKIP},
        E.CONTAINER_NO_GPU,
    ),
    "independent checks still run after a failure": (
        [("a", L.RUNTIME, fail(E.NO_DRIVER), ()), ("b", L.TENSORFLOW, PASS, ())],
        {"a": Status.FAIL, "b": Status.PASS},
        E.NO_DRIVER,
    ),
    "the lowest layer wins, not the first code or the lowest number": (
        [("h", L.HEALTH, fail(E.GPU_UNHEALTHY), ()), ("t", L.TENSORFLOW, fail(E.TF_NO_GPU), ())],
        {"h": Status.FAIL, "t": Status.FAIL},
        E.GPU_UNHEALTHY,
    ),
    "within a layer, the first to run wins": (
        [("x", L.RESULTS, fail(E.RESULT_MISMATCH), ()), ("y", L.RESULTS, fail(E.COLLECTIVE_FAILED), ())],
        {"x": Status.FAIL, "y": Status.FAIL},
        E.RESULT_MISMATCH,
    ),
    "a crash is a result and the run goes on": (
        [("a", L.RUNTIME, boom, ()), ("b", L.DRIVER, PASS, ())],
        {"a": Status.CRASH, "b": Status.PASS},
        E.INTERNAL_ERROR,
    ),
    "a crash blocks its dependents": (
        [("a", L.RUNTIME, boom, ()), ("b", L.DRIVER, PASS, ("a",))],
        {"a": Status.CRASH, "b": Status.SKIP},
        E.INTERNAL_ERROR,
    ),
    "a real failure beats a crash, even in a higher layer": (
        [("a", L.RUNTIME, boom, ()), ("t", L.TRAINING, fail(E.TRAINING_FAILED), ())],
        {"a": Status.CRASH, "t": Status.FAIL},
        E.TRAINING_FAILED,
    ),
    "a not-applicable skip does not block": (
        [("gpu", L.DRIVER, NA, ()), ("tf", L.TENSORFLOW, PASS, ("gpu",))],
        {"gpu": Status.SKIP, "tf": Status.PASS},
        E.OK,
    ),
    "the watchdog's timeout decides when nothing below failed": (
        [("a", L.DEVICES, PASS, ()), ("s", L.TRAINING, fail(E.TIMEOUT), ("a",))],
        {"a": Status.PASS, "s": Status.FAIL},
        E.TIMEOUT,
    ),
}


@pytest.mark.parametrize(("specs", "statuses", "code"), CASES.values(), ids=CASES.keys())
def test_gating_crashes_and_exit_code(
    specs: list[tuple[str, Layer, Callable[[Context], Outcome], tuple[str, ...]]],
    statuses: dict[str, Status],
    code: ExitCode,
) -> None:
    results = run_checks(pipeline(*specs), ctx())
    assert {r.id: r.status for r in results} == statuses
    assert decide(results).code == code


def test_skip_names_the_blocker_and_crash_keeps_the_traceback() -> None:
    results = run_checks(pipeline(("a", L.RUNTIME, boom, ()), ("b", L.DRIVER, PASS, ("a",))), ctx())
    crash, skip = results
    assert crash.summary == "the check itself crashed: RuntimeError: probe exploded"
    assert "probe exploded" in "".join(crash.details["traceback"])
    assert crash.code == E.INTERNAL_ERROR
    assert skip.summary == "not run: needs a, which crashed" and skip.blocked_by == "a"


def test_verdict_carries_the_deciding_check() -> None:
    results = run_checks(pipeline(("a", L.RUNTIME, fail(E.CONTAINER_NO_GPU), ())), ctx())
    verdict = decide(results)
    assert (verdict.check_id, verdict.summary, verdict.hint) == (
        "a",
        "failed with CONTAINER_NO_GPU",
        "fix CONTAINER_NO_GPU",
    )


def test_failure_without_a_code_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="needs an exit code"):
        failed(E.OK, "nope")


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([("a", L.RUNTIME, PASS, ("b",)), ("b", L.DRIVER, PASS, ())], "requires ['b']"),
        ([("a", L.DRIVER, PASS, ()), ("b", L.RUNTIME, PASS, ())], "runs after a higher layer"),
        ([("a", L.DRIVER, PASS, ()), ("a", L.DRIVER, PASS, ())], "listed twice"),
    ],
)
def test_pipeline_wiring_mistakes_are_caught(
    specs: list[tuple[str, Layer, Callable[[Context], Outcome], tuple[str, ...]]], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate_pipeline(pipeline(*specs))


def test_the_real_pipelines_are_wired_correctly() -> None:
    from tfdist_validate import pipeline as real

    for command in ("check", "run"):
        validate_pipeline(real.build(command))
