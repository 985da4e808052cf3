"""The JSON report: the contract's top-level keys, built from the results and the facts the checks found."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from tfdist_validate import TOOL_NAME, __version__
from tfdist_validate.result import CheckResult
from tfdist_validate.settings import Settings
from tfdist_validate.verdict import Verdict

SCHEMA_VERSION = "1.0"


def image_facts(env: Mapping[str, str]) -> dict[str, str] | None:
    """The image writes its OCI labels into these variables, so a report says which image produced it."""
    keys = {
        "version": "TFDIST_IMAGE_VERSION",
        "revision": "TFDIST_IMAGE_REVISION",
        "source": "TFDIST_IMAGE_SOURCE",
    }
    found = {k: env[v] for k, v in keys.items() if env.get(v)}
    return found or None


def build(
    *,
    command: str,
    settings: Settings,
    env: Mapping[str, str],
    started_at: dt.datetime,
    duration_s: float,
    results: Sequence[CheckResult],
    verdict: Verdict,
    facts: Mapping[str, Mapping[str, Any]],
    recorded: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`recorded`: the probes' answers (record.py), which `replay` decides from again."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": __version__, "image": image_facts(env)},
        "command": command,
        "started_at": started_at.astimezone(dt.timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(duration_s, 3),
        "verdict": verdict.to_json(),
        "host": dict(facts.get("host", {})),
        "tensorflow": dict(facts.get("tensorflow", {})),
        "checks": [r.to_json() for r in results],
        "smoke": dict(facts["smoke"]) if "smoke" in facts else None,
        "cluster": dict(facts["cluster"]) if "cluster" in facts else None,
        "settings": settings.to_json(),
        "pid": os.getpid(),
        "facts": None if recorded is None else dict(recorded),
    }


def dumps(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False, default=str) + "\n"
