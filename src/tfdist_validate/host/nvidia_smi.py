"""nvidia-smi as the fallback and cross-check of NVML: the query we run, its parser, and its error messages.

Formats are the real ones recorded in tests/fixtures/real/ (`--format=csv,noheader,nounits`: one line per GPU,
", "-separated, unsupported values as `[N/A]`, `N/A` or `[Not Supported]`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from tfdist_validate.host.gpus import NA, DriverSnapshot, Gpu, ProbeError

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
