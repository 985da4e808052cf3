"""Typed facts the host checks hand to each other within one run.

They live in `ctx.facts` under a key that is not a report section (the report takes only "host",
"tensorflow", "smoke" and "cluster"), so later checks read the objects, not their JSON.
"""

from __future__ import annotations

from tfdist_validate.context import Context
from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.host.runtime import RuntimeFacts
from tfdist_validate.probes.tf_facts import TfFacts

_KEY = "_host_state"

DRY_RUN = "the GPU layers are not checked in a --cpu-replicas dry run"


def put_runtime(ctx: Context, facts: RuntimeFacts) -> None:
    ctx.section(_KEY)["runtime"] = facts


def put_driver(ctx: Context, snapshot: DriverSnapshot) -> None:
    ctx.section(_KEY)["driver"] = snapshot


def put_tf(ctx: Context, facts: TfFacts) -> None:
    ctx.section(_KEY)["tf"] = facts


def runtime(ctx: Context) -> RuntimeFacts | None:
    value = ctx.section(_KEY).get("runtime")
    return value if isinstance(value, RuntimeFacts) else None


def driver(ctx: Context) -> DriverSnapshot | None:
    value = ctx.section(_KEY).get("driver")
    return value if isinstance(value, DriverSnapshot) else None


def tf(ctx: Context) -> TfFacts | None:
    value = ctx.section(_KEY).get("tf")
    return value if isinstance(value, TfFacts) else None
