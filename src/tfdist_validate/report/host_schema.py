"""The report's `host` and `tensorflow` blocks (what the host layers found). Strict where we write them, so a
renamed or mistyped fact fails the schema test; `host` stays open for blocks other layers add."""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_NUM_OR_NULL = {"type": ["number", "null"]}
_STRINGS = {"type": "array", "items": _STR}
_NA = {"const": "n/a"}
_COUNT = {"anyOf": [{"type": "integer", "minimum": 0}, _NA]}
_YES_NO = {"enum": ["Yes", "No", "n/a"]}
_MODE = {"type": "string"}  # "Enabled" / "Disabled" / "n/a", nvidia-smi's words when it is the source


def _strict(properties: dict[str, Any], required: list[str] | None = None, nullable: bool = False) -> Any:
    schema = {
        "type": ["object", "null"] if nullable else "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }
    return schema


GPU = _strict(
    {
        "index": {"type": "integer", "minimum": 0},
        "name": _STR_OR_NULL,
        "uuid": _STR_OR_NULL,
        "memory_total_mib": _NUM_OR_NULL,
        "memory_used_mib": _NUM_OR_NULL,
        "compute_capability": {"type": ["string", "null"], "pattern": r"^\d+\.\d+$"},
        "mig_mode": _MODE,
        "persistence_mode": _MODE,
        "compute_mode": _MODE,
        "ecc_mode": _MODE,
        "ecc_errors": {
            "type": "object",
            "propertyNames": {
                "enum": [f"{s}_{k}" for s in ("volatile", "aggregate") for k in ("corrected", "uncorrected")]
            },
            "additionalProperties": _COUNT,
        },
        "retired_pages": {
            "type": "object",
            "properties": {"single_bit": _COUNT, "double_bit": _COUNT, "pending": _YES_NO},
            "additionalProperties": False,
        },
        "remapped_rows": {
            "type": "object",
            "properties": {
                "correctable": _COUNT,
                "uncorrectable": _COUNT,
                "pending": _YES_NO,
                "failure": _YES_NO,
            },
            "additionalProperties": False,
        },
        "processes": {
            "type": ["array", "null"],
            "items": _strict({"pid": {"type": "integer"}, "used_memory_mib": _NUM_OR_NULL}),
        },
        "clock_event_reasons": {"type": ["array", "null"], "items": _STR},
        "error": _STR_OR_NULL,
        "query_errors": {"type": "object", "additionalProperties": _STR},
        "mig_devices": {"type": "array", "items": _STR},
        "fabric_state": _STR,
        "fabric_status": _STR,
        "pci_bus_id": _STR_OR_NULL,
        "nvlink_links": {"type": ["array", "null"], "items": {"enum": ["active", "inactive"]}},
        "nvlink_errors": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "propertyNames": {"enum": ["replay", "recovery", "crc_flit", "crc_data"]},
                "additionalProperties": {"type": "integer", "minimum": 0},
            },
        },
    },
    # query_errors, mig_devices, fabric_*, pci_bus_id and nvlink_* came later: a report of the same major
    # without them is valid
    required=[
        "index",
        "name",
        "uuid",
        "memory_total_mib",
        "memory_used_mib",
        "compute_capability",
        "mig_mode",
        "persistence_mode",
        "compute_mode",
        "ecc_mode",
        "ecc_errors",
        "retired_pages",
        "remapped_rows",
        "processes",
        "clock_event_reasons",
        "error",
    ],
)

_PROBE_ERROR = _strict(
    {
        "kind": _STR,
        "message": _STR,
        "source": {"enum": ["nvml", "nvidia-smi"]},
        "nvml_class": _STR_OR_NULL,
        "nvml_code": {"type": ["integer", "null"]},
    },
    nullable=True,
)

_SMI = _strict(
    {
        "ran": {"type": "boolean"},
        "error": _PROBE_ERROR,
        "gpus": {"type": ["integer", "null"]},
        "driver_version": _STR_OR_NULL,
    }
)

DRIVER = _strict(
    {
        "source": {"enum": ["nvml", "nvidia-smi"]},
        "version": _STR_OR_NULL,
        "cuda_version": {"type": ["string", "null"], "pattern": r"^\d+\.\d+$"},
        "error": _PROBE_ERROR,
        "nvidia_smi": _SMI,
    },
    required=["source", "version", "cuda_version", "error"],
)

HOST: dict[str, Any] = {
    "type": "object",
    "properties": {
        "runtime": _strict(
            {
                "kind": {
                    "enum": [
                        "host",
                        "docker",
                        "podman",
                        "containerd",
                        "cri-o",
                        "lxc",
                        "container",
                        "kubernetes",
                    ]
                },
                "label": _STR,
                "container": {"type": "boolean"},
                "kubernetes": {"type": "boolean"},
                "wsl": {"enum": [1, 2, None]},
            }
        ),
        "container": _strict(
            {
                "engine": _STR_OR_NULL,
                "evidence": _STRINGS,
                "nvidia_visible_devices": _STR_OR_NULL,
                "nvidia_driver_capabilities": _STR_OR_NULL,
            },
            nullable=True,
        ),
        "kubernetes": _strict({"evidence": _STRINGS}, nullable=True),
        "wsl2": _strict(
            {
                "version": {"enum": [1, 2]},
                "kernel": _STR,
                "dxg": {"type": "boolean"},
                "libcuda": {"type": "boolean"},
                "libnvidia_ml": {"type": "boolean"},
                "nvidia_smi": _STR_OR_NULL,
                "shadowing_libcuda": _STRINGS,
            },
            nullable=True,
        ),
        "device_nodes": _strict({"gpus": _STRINGS, "control": _STRINGS}),
        "kernel_driver": _strict({"nvrm": _STR_OR_NULL, "version": _STR_OR_NULL}),
        "driver_libraries": {"type": "object", "additionalProperties": _STRINGS},
        "cuda_visible_devices": _strict(
            {"value": _STR_OR_NULL, "hides_all": {"type": "boolean"}, "reason": _STR}
        ),
        "driver": DRIVER,
        "collective_env": {"type": "object", "additionalProperties": _STR},
        "gpus": {"type": "array", "items": GPU},
        "replicas_planned": {"type": "integer", "minimum": 0},
        "devices": {"type": "array", "items": {"type": "string", "pattern": r"^/(gpu|cpu):\d+$"}},
    },
}

TENSORFLOW: dict[str, Any] = {
    "type": "object",
    "properties": {
        "imported": {"type": "boolean"},
        "version": _STR_OR_NULL,
        "build_info": {"type": "object"},
        "built_with_cuda": {"type": ["boolean", "null"]},
        "gpus": _STRINGS,
        "gpu_details": {"type": "array", "items": {"type": "object"}},
        "import_error": _STR_OR_NULL,
        "probe_error": _STR_OR_NULL,
        "timed_out": {"type": "boolean"},
        "libcuda_version": {"type": ["integer", "null"]},
        "missing_libraries": _STRINGS,
        # a first start that JIT-compiles from PTX (checks/ptx_jit.py): its cost, the JIT cache, the deadline
        "ptx_jit": {"type": "object"},
        "cuda_libraries": {"type": ["array", "null"], "items": {"type": "object"}},
        "cuda_wheels": {"type": "object", "additionalProperties": _STR},
    },
    "additionalProperties": False,
}
