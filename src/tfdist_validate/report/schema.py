"""The JSON Schema of the report. Tests validate every report the tool writes against it."""

from __future__ import annotations

from typing import Any

from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.report.json_report import SCHEMA_VERSION
from tfdist_validate.result import Layer, Status

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

_GPU = {
    "type": "object",
    "properties": {
        "index": {"type": "integer", "minimum": 0},
        "name": {"type": "string"},
        "uuid": {"type": "string"},
        "memory_total_mib": _NUMBER_OR_NULL,
        "compute_capability": _STRING_OR_NULL,
    },
}

_EPOCH = {
    "type": "object",
    "required": ["epoch"],
    "properties": {"epoch": {"type": "integer", "minimum": 1}},
    "additionalProperties": {"type": ["number", "null"]},
}

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
        "host": {
            "type": "object",
            "properties": {
                "runtime": {"type": "object"},
                "driver": {"type": "object"},
                "gpus": {"type": "array", "items": _GPU},
            },
        },
        "tensorflow": {"type": "object"},
        "checks": {"type": "array", "items": _CHECK},
        "smoke": {
            "type": ["object", "null"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1},
                "global_batch": {"type": "integer", "minimum": 1},
                "devices": {"type": "array", "items": {"type": "string"}},
                "epochs": {"type": "array", "items": _EPOCH},
                "final_val_binary_accuracy": _NUMBER_OR_NULL,
            },
        },
        "cluster": {"type": ["object", "null"]},
        "settings": {"type": "object"},
        "pid": {"type": "integer"},
    },
}
