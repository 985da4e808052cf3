"""Readers of real recorded nvidia-smi outputs (tests/fixtures/real/, SOURCES.md there): the `--query-gpu`
CSV, the `-q -x` XML, the plain table and its banner, the `-L` listing. Each returns the fields the NVML
stand-in (fake_nvml.py) answers from; none invents a format.
"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
# nvidia-smi -q -x names of clock-event reasons -> NVML's bits (nvml.h nvmlClocksEventReason*)
THROTTLE_BITS = {"clocks_throttle_reason_gpu_idle": 0x1, "clocks_throttle_reason_sw_power_cap": 0x4}


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def strip_unit(value: str) -> str:
    return re.sub(r"\s*(MiB|%|W|MHz|us)$", "", value.strip())


def query_csv_device(fixture: str, row: int = 0) -> dict[str, str]:
    """One GPU of a real `nvidia-smi --query-gpu=<all> --format=csv` capture, keyed by field name."""
    rows = list(csv.reader(real(fixture).splitlines(), skipinitialspace=True))
    names = [h.split(" [")[0] for h in rows[0]]
    return {n: strip_unit(v) for n, v in zip(names, rows[1 + row], strict=True)}


def cuda_from_banner(fixture: str) -> int:
    """ "CUDA Version: 13.2" in plain nvidia-smi output, in NVML's encoding (13020)."""
    match = re.search(r"CUDA Version: (\d+)\.(\d+)", real(fixture))
    assert match, fixture
    return int(match.group(1)) * 1000 + int(match.group(2)) * 10


def xml_device(fixture: str) -> tuple[str, int, dict[str, str]]:
    """(driver version, CUDA version, fields) from a real `nvidia-smi -q -x`, with --query-gpu's names."""
    root = ET.fromstring(real(fixture))
    gpu = root.find("gpu")
    assert gpu is not None
    major, minor = (root.findtext("cuda_version") or "0.0").split(".")

    def text(path: str) -> str:
        return strip_unit(gpu.findtext(path) or "[N/A]")

    fields = {
        "name": text("product_name"),
        "uuid": text("uuid"),
        "memory.total": text("fb_memory_usage/total"),
        "memory.used": text("fb_memory_usage/used"),
        "mig.mode.current": text("mig_mode/current_mig"),
        "persistence_mode": text("persistence_mode"),
        "compute_mode": text("compute_mode"),
        "ecc.mode.current": text("ecc_mode/current_ecc"),
        "retired_pages.single_bit_ecc.count": text(
            "retired_pages/multiple_single_bit_retirement/retired_count"
        ),
        "retired_pages.double_bit.count": text("retired_pages/double_bit_retirement/retired_count"),
        "retired_pages.pending": text("retired_pages/pending_retirement"),
        "remapped_rows.pending": text("remapped_rows"),  # "N/A" on this Turing card
    }
    for scope in ("volatile", "aggregate"):
        for kind, tag in (("corrected", "correctable"), ("uncorrected", "uncorrectable")):
            counts = [gpu.findtext(f"ecc_errors/{scope}/{m}_{tag}") or "0" for m in ("sram", "dram")]
            # a GeForce card prints N/A: NVML answers "not supported" there
            total = str(sum(int(c) for c in counts)) if all(c.isdigit() for c in counts) else "[N/A]"
            fields[f"ecc.errors.{kind}.{scope}.total"] = total
    active = [r.tag for r in gpu.iterfind("clocks_throttle_reasons/*") if r.text == "Active"]
    fields["clocks_throttle_reasons.active"] = hex(sum(THROTTLE_BITS.get(t, 0) for t in active))
    fields["processes"] = json.dumps(
        [
            {"pid": int(p.findtext("pid") or 0), "used_memory": strip_unit(p.findtext("used_memory") or "0")}
            for p in gpu.iterfind("processes/process_info")
            if (p.findtext("type") or "").startswith("C")  # NVML's compute-process list
        ]
    )
    return root.findtext("driver_version") or "", int(major) * 1000 + int(minor) * 10, fields


def mig_uuids(fixture: str) -> list[str]:
    """The MIG device UUIDs of a real `nvidia-smi -L` listing."""
    return re.findall(r"\(UUID: (MIG-[0-9a-f-]+)\)", real(fixture))


def table_devices(fixture: str, **extra: str) -> tuple[str, int, list[dict[str, str]]]:
    """(driver, CUDA, devices) from a real plain `nvidia-smi` table: name, persistence mode, memory, compute
    and MIG mode as printed; `extra` adds what a table does not show (e.g. compute_cap from a capture of the
    same product)."""
    text = real(fixture)
    driver = re.search(r"Driver Version: (\S+)", text)
    assert driver, fixture
    rows = re.finditer(
        r"^\|\s+(\d+)\s+(NVIDIA [^|]*?)\s+(On|Off)\s+\|.*\n"
        r"^\|[^|]*\|\s+(\d+)MiB\s+/\s+(\d+)MiB\s+\|\s+\S+\s+(\S+)\s+\|\n"
        r"(?:^\|[^|]*\|[^|]*\|\s+(\S+)\s+\|)?",
        text,
        re.M,
    )
    devices = [
        {
            "name": m.group(2).strip(),
            "persistence_mode": "Enabled" if m.group(3) == "On" else "Disabled",
            "memory.used": m.group(4),
            "memory.total": m.group(5),
            "compute_mode": m.group(6),
            "mig.mode.current": m.group(7) or "[N/A]",
            **extra,
        }
        for m in rows
    ]
    assert devices, fixture
    return driver.group(1), cuda_from_banner(fixture), devices


def table_bus_ids(fixture: str) -> list[str]:
    """The Bus-Id column of a real plain `nvidia-smi` table, in GPU order."""
    return re.findall(r"^\|\s+\d+\s+NVIDIA [^|]*\|\s+([0-9A-Fa-f]{8}:[0-9A-Fa-f:.]+)\s", real(fixture), re.M)


def nvlink_status(fixture: str) -> list[dict[str, str]]:
    """Each GPU of a real `nvidia-smi nvlink -s` capture: its name, UUID and, as JSON, each link's state in
    link order ("25 GB/s", or "<inactive>" for a link that is down). A GPU without NVLink prints nothing."""
    gpus: list[dict[str, str]] = []
    links: list[str] = []
    for line in real(fixture).splitlines():
        header = re.match(r"GPU (\d+): (.+) \(UUID: (\S+)\)$", line.strip())
        link = re.match(r"Link (\d+): (.+)$", line.strip())
        if header:
            links = []
            gpus.append({"name": header.group(2), "uuid": header.group(3)})
        elif link:
            assert int(link.group(1)) == len(links), line
            links.append(link.group(2))
            gpus[-1]["nvlink"] = json.dumps(links)
    return gpus


def topo_matrix(fixture: str) -> list[list[str]]:
    """The GPU-to-GPU cells of a real `nvidia-smi topo -m` ("X", "NV12", "PIX", "SYS", ...), GPU rows by
    GPU columns; NIC rows and columns, CPU and NUMA affinity are left out."""
    lines = [line for line in real(fixture).splitlines() if line.strip()]
    header = lines[0].split("\t") if "\t" in lines[0] else lines[0].split()
    gpus = sum(1 for cell in header if re.fullmatch(r"\s*GPU\d+\s*", cell))
    rows = []
    for line in lines[1:]:
        cells = line.split("\t") if "\t" in line else line.split()
        if re.fullmatch(r"GPU\d+", cells[0].strip()):
            rows.append([c.strip() for c in cells[1 : 1 + gpus]])
    return rows
