"""The one home of nvidia-smi: the fallback and cross-check of NVML (the query we run, with its retry for old
drivers, its parser and its error messages) and the outputs a bug report attaches (`-q`, `topo -m`).

Formats are the real ones recorded in tests/fixtures/real/ (`--format=csv,noheader,nounits`: one line per GPU,
", "-separated, unsupported values as `[N/A]`, `N/A` or `[Not Supported]`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tfdist_validate.host.gpus import NA, DriverSnapshot, Gpu, ProbeError
from tfdist_validate.probes.commands import CommandResult, CommandRunner

BINARY = "nvidia-smi"
# What a bug report attaches: the full per-GPU report and the interconnect matrix.
FULL_REPORT_ARGS = ("-q",)
TOPOLOGY_ARGS = ("topo", "-m")

QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "memory.total",
    "memory.used",
    "compute_cap",  # drivers before ~510 do not know it: then we ask again without it
    "mig.mode.current",
    "persistence_mode",
    "compute_mode",
    "driver_version",
)
_UNSUPPORTED = {"[N/A]", "N/A", "[Not Supported]", "[Requested functionality has been deprecated]", ""}


def query_argv(binary: str, fields: Sequence[str] = QUERY_FIELDS) -> list[str]:
    return [binary, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]


@dataclass(frozen=True)
class SmiAnswer:
    snapshot: DriverSnapshot | None  # parsed facts, when nvidia-smi answered
    error: ProbeError | None  # its message, when it ran and failed
    ran: bool  # False: not installed here

    def to_json(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "error": self.error.to_json() if self.error else None,
            "gpus": len(self.snapshot.gpus) if self.snapshot else None,
            "driver_version": self.snapshot.driver_version if self.snapshot else None,
        }


def query(run: CommandRunner, binary: str, timeout_s: float) -> SmiAnswer:
    """`nvidia-smi --query-gpu=...`, asked again without `compute_cap` where the driver (before ~510) does
    not know that field."""
    fields: tuple[str, ...] = QUERY_FIELDS
    result = run(query_argv(binary, fields), timeout_s)
    if not result.ok and "not a valid field" in result.stdout + result.stderr:
        fields = tuple(f for f in fields if f != "compute_cap")
        result = run(query_argv(binary, fields), timeout_s)
    return _answer(result, fields)


def _answer(result: CommandResult, fields: tuple[str, ...]) -> SmiAnswer:
    if result.returncode is None and not (result.stdout or result.stderr):
        return SmiAnswer(None, None, ran=False)  # not installed, or killed at the deadline with no output
    if result.ok:
        try:
            return SmiAnswer(snapshot_from_query(result.stdout, fields), None, ran=True)
        except ValueError as err:
            return SmiAnswer(None, ProbeError("unparsed", str(err), "nvidia-smi"), ran=True)
    return SmiAnswer(None, classify_error(result.stdout + "\n" + result.stderr), ran=True)


def parse_query(text: str, fields: Sequence[str]) -> list[dict[str, str | None]]:
    """One dict per GPU line; unsupported values become None."""
    rows = []
    for values in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not values:
            continue
        if len(values) != len(fields):
            raise ValueError(f"expected {len(fields)} values, got {len(values)}: {', '.join(values)}")
        rows.append(
            {
                f: (None if v.strip() in _UNSUPPORTED else v.strip())
                for f, v in zip(fields, values, strict=True)
            }
        )
    return rows


def _number(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def snapshot_from_query(text: str, fields: Sequence[str] = QUERY_FIELDS) -> DriverSnapshot:
    rows = parse_query(text, fields)
    gpus = []
    for position, row in enumerate(rows):
        index = row.get("index")
        gpus.append(
            Gpu(
                index=int(index) if index and index.isdigit() else position,
                name=row.get("name"),
                uuid=row.get("uuid"),
                memory_total_mib=_number(row.get("memory.total")),
                memory_used_mib=_number(row.get("memory.used")),
                compute_capability=row.get("compute_cap"),
                mig_mode=row.get("mig.mode.current") or NA,
                persistence_mode=row.get("persistence_mode") or NA,
                compute_mode=row.get("compute_mode") or NA,
            )
        )
    driver = next((r["driver_version"] for r in rows if r.get("driver_version")), None)
    # --query-gpu has no field for the CUDA version the driver supports; NVML is the source of that fact
    return DriverSnapshot("nvidia-smi", None, driver, None, tuple(gpus))


# The messages nvidia-smi prints (tests/fixtures/real/nvidia-smi-error_*.txt) and what each means.
_MESSAGES = (
    ("couldn't find libnvidia-ml.so", "library_not_found"),
    ("couldn't communicate with the nvidia driver", "driver_not_loaded"),
    ("driver/library version mismatch", "version_mismatch"),
    ("insufficient permissions", "no_permission"),
    ("failed to initialize nvml: unknown error", "unknown"),
    ("no devices were found", "no_devices"),
)


def classify_error(text: str) -> ProbeError:
    lowered = text.lower()
    kind = next((k for needle, k in _MESSAGES if needle in lowered), "nvidia_smi_error")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "no output")
    return ProbeError(kind, first, "nvidia-smi")
