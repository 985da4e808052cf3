"""The JSON Schema of the report. Tests validate every report the tool writes against it."""

from __future__ import annotations

from typing import Any

from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.report import host_schema
from tfdist_validate.report.json_report import SCHEMA_VERSION
from tfdist_validate.result import Layer, Status
from tfdist_validate.smoke.spec import STAGES

_CODES = [int(c) for c in ExitCode]
_NAMES = [c.name for c in ExitCode]
_NUMBER_OR_NULL = {"type": ["number", "null"]}
_STRING_OR_NULL = {"type": ["string", "null"]}

_CHECK = {
    "type": "object",
    "required": ["id", "layer", "status", "code", "summary", "hint", "duration_s", "details"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": r"^[a-z0-9_]+(\.[a-z0-9_]+)*$"},
        "layer": {"enum": [layer.label for layer in Layer]},
        "status": {"enum": [s.value for s in Status]},
        "code": {"enum": _CODES},
        "summary": {"type": "string", "minLength": 1},
        "hint": {"type": "string"},
        "duration_s": {"type": "number", "minimum": 0},
        "details": {"type": "object"},
        "blocked_by": _STRING_OR_NULL,
    },
}

_EPOCH = {
    "type": "object",
    "required": ["epoch"],
    "properties": {"epoch": {"type": "integer", "minimum": 1}},
    "additionalProperties": {"type": ["number", "null"]},
}

_INT_0 = {"type": "integer", "minimum": 0}
_INT_1 = {"type": "integer", "minimum": 1}
_SECONDS = {"type": "number", "minimum": 0}
_STRINGS = {"type": "array", "items": {"type": "string"}}


def _closed(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    """An object whose keys are all declared: a misspelt key in a report is a test failure."""
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


# The smoke test's block (smoke/run.py fills it from the child's results, smoke/child*.py).
_SMOKE_STAGE = {"ran": {"type": "boolean"}, "ok": {"type": "boolean"}, "replicas": _INT_1}
# a stage that TensorFlow's exception ended (smoke/errors.py, Failure), or that did not run
_STAGE_FAILURE = {
    "reason": {"type": "string"},
    "error": {"type": "string"},
    "oom": {"type": "boolean"},
    "error_device": _STRING_OR_NULL,
}
_SMOKE = _closed(
    [],
    {
        "dry_run": {"type": "boolean"},
        "requested_devices": {"type": ["array", "null"], "items": {"type": "string"}},
        "strategy": {"type": "string"},
        "replicas": _INT_1,
        "devices": _STRINGS,
        "global_batch": _INT_1,
        "per_replica_batch": _INT_1,
        "cross_device_ops": _closed(
            ["class", "implementation", "name", "reduce_to_device"],
            {
                "class": _STRING_OR_NULL,
                "implementation": _STRING_OR_NULL,
                "name": {"type": "string"},
                "reduce_to_device": _STRING_OR_NULL,
                # --cross-device-ops as decided for this host (smoke/cross_device.py), and why
                "requested": {"type": "string"},
                "why": {"type": "string"},
            },
        ),
        "epochs": {"type": "array", "items": _EPOCH},
        "final_val_binary_accuracy": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "dev_shm_bytes": {"type": ["integer", "null"], "minimum": 0},
        "visible_gpus": _STRINGS,
        "steps_per_epoch": _INT_1,
        "step_time_s": {"type": ["number", "null"], "minimum": 0},
        "epoch_train_s": {"type": "array", "items": _SECONDS},
        "sync": _closed(
            ["ran", "ok"],
            {
                **_SMOKE_STAGE,
                "reason": {"type": "string"},
                "variables_checked": _INT_0,
                "sync_on_read_skipped": _INT_0,
                "mismatched_count": _INT_0,
                "mismatched": {
                    "type": "array",
                    "items": _closed(
                        ["variable", "copies", "max_abs_diff"],
                        {"variable": {"type": "string"}, "copies": _INT_0, "max_abs_diff": _NUMBER_OR_NULL},
                    ),
                },
                "not_mirrored": _STRINGS,
            },
        ),
        "conv": _closed(
            ["ran", "ok"],
            {
                **_SMOKE_STAGE,
                **_STAGE_FAILURE,
                "library": {"type": "string"},
                "input_shape": {"type": "array", "items": _INT_1},
                "kernel_shape": {"type": "array", "items": _INT_1},
                "results": _INT_0,
                "max_rel_error": {"type": "number", "minimum": 0},
                "tolerance": {"type": "number", "minimum": 0},
            },
        ),
        "prefetch": _closed(
            ["ran", "ok"],
            {
                **_SMOKE_STAGE,
                **_STAGE_FAILURE,
                "devices": _STRINGS,
                "landed_on": _STRINGS,
                "batches": _INT_0,
                "rows": _INT_0,
                "expected_rows": _INT_1,
                "correct": _INT_0,
                "val_binary_accuracy": {"type": "number", "minimum": 0, "maximum": 1},
                "fit_val_binary_accuracy": {"type": "number", "minimum": 0, "maximum": 1},
            },
        ),
        "allreduce": _closed(
            ["ran", "ok"],
            {
                **_SMOKE_STAGE,
                "error": {"type": "string"},
                "results": _INT_0,
                "elements": _INT_1,
                "dtype": {"type": "string"},
                "first_values": {"type": "array", "items": _NUMBER_OR_NULL},
                "expected_first": {"type": "number"},
                "wrong": {
                    "type": "array",
                    "items": _closed(
                        ["replica", "index", "got", "want"],
                        {
                            "replica": _INT_0,
                            "index": {"type": ["integer", "null"], "minimum": 0},
                            "got": _NUMBER_OR_NULL,
                            "want": _NUMBER_OR_NULL,
                        },
                    ),
                },
            },
        ),
        "bandwidth": _closed(
            ["ran", "ok", "size_bytes"],
            {
                **_SMOKE_STAGE,
                "error": {"type": "string"},
                "reason": {"type": "string"},
                "size_bytes": _INT_1,
                "method": {"type": "string"},
                "implementation": {"type": "string"},
                "per_call": _INT_1,
                "calls": _INT_1,
                "call_s": {"type": "array", "items": _SECONDS},
                "iterations": _INT_1,
                "time_s": _SECONDS,
                "algbw_gbps": _SECONDS,
                "busbw_gbps": _SECONDS,
            },
        ),
        "log": _closed(["path", "tail"], {"path": {"type": "string"}, "tail": _STRINGS}),
        "output_tail": _STRINGS,
        "child": _closed(
            ["pid"],
            {
                "pid": {"type": ["integer", "null"]},
                "exit_status": {"type": ["integer", "null"]},
                "exit": {"type": "string"},
                "timed_out": {"type": "boolean"},
                "interrupted": {"type": "boolean"},
                "duration_s": _SECONDS,
                "budget_s": _SECONDS,
                "stopped_during": {"enum": [*STAGES, None]},
                "leftover_pids": {"type": "array", "items": _INT_1},
                "results_path": {"type": "string"},
                "error": {"type": ["object", "null"]},
            },
        ),
    },
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://github.com/tfdist-validate/tfdist-validate/report.schema.json",
    "title": "tfdist-validate report",
    "type": "object",
    "required": [
        "schema_version",
        "tool",
        "command",
        "started_at",
        "duration_s",
        "verdict",
        "host",
        "tensorflow",
        "checks",
        "smoke",
    ],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "tool": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {
                "name": {"const": "tfdist-validate"},
                "version": {"type": "string"},
                "image": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            },
        },
        "command": {"enum": ["run", "check"]},
        "started_at": {"type": "string", "format": "date-time"},
        "duration_s": {"type": "number", "minimum": 0},
        "verdict": {
            "type": "object",
            "required": ["code", "name", "summary", "hint"],
            "properties": {
                "code": {"enum": _CODES},
                "name": {"enum": _NAMES},
                "summary": {"type": "string", "minLength": 1},
                "hint": {"type": "string"},
                "check": _STRING_OR_NULL,
            },
        },
        "host": host_schema.HOST,
        "tensorflow": host_schema.TENSORFLOW,
        "checks": {"type": "array", "items": _CHECK},
        "smoke": {"anyOf": [{"type": "null"}, _SMOKE]},
        "cluster": {"type": ["object", "null"]},
        "settings": {"type": "object"},
        "pid": {"type": "integer"},
        # what the probes answered (record.py): what `replay` decides from; null in reports without it
        "facts": {
            "type": ["object", "null"],
            "required": ["format", "runtime", "nvml", "commands", "tensorflow", "smoke"],
            "properties": {
                "format": {"type": "integer", "minimum": 1},
                "runtime": {"type": ["object", "null"]},
                "nvml": _closed(
                    ["asked", "answer"],
                    {"asked": {"type": "boolean"}, "answer": {"type": ["object", "null"]}},
                ),
                "commands": {"type": "array", "items": {"type": "object"}},
                "tensorflow": {"type": ["object", "null"]},
                "smoke": {"type": ["object", "null"]},
                "tf_config": _STRING_OR_NULL,
            },
        },
    },
}
