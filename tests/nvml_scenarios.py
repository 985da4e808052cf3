"""The named NVML scenarios: FakeNvml stand-ins (fake_nvml.py) answering from real recorded nvidia-smi
outputs (recorded_outputs.py), each named for what it shows (a healthy pair, a lost GPU, ECC errors, MIG,
an old driver, an HGX H100 whose fabric is not up). Where a value is changed from the capture, the
docstring says which and why.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping

import pynvml

from fake_nvml import FakeNvml
from recorded_outputs import (
    cuda_from_banner,
    mig_uuids,
    nvlink_status,
    query_csv_device,
    real,
    strip_unit,
    table_bus_ids,
    table_devices,
    topo_matrix,
    xml_device,
)
from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.probes import nvml as nvml_probe


def with_processes(device: Mapping[str, str], compute_apps_fixture: str) -> dict[str, str]:
    """Attach the processes of a real `--query-compute-apps` capture to a device."""
    rows = list(csv.reader(real(compute_apps_fixture).splitlines(), skipinitialspace=True))
    names = [h.split(" [")[0] for h in rows[0]]
    apps = [dict(zip(names, r, strict=True)) for r in rows[1:]]
    procs = [{"pid": int(a["pid"]), "used_memory": strip_unit(a["used_gpu_memory"])} for a in apps]
    return {**device, "processes": json.dumps(procs)}


# The named NVML scenarios. Each value comes from the fixture it names.


def nvml_two_healthy() -> FakeNvml:
    """RTX 2080 SUPER + RTX 4080 SUPER, both captured on driver 595.71.05 (CUDA 13.2)."""
    first = {**query_csv_device("nvidia-smi-query-csv_rtx2080s_595.71.05_linux.csv"), "index": "0"}
    second = {**query_csv_device("nvidia-smi-query-csv_rtx4080s_595.71.05_linux.csv"), "index": "1"}
    cuda = cuda_from_banner("nvidia-smi_rtx2080s_595.71.05_linux.txt")
    return FakeNvml(first["driver_version"], cuda, [first, second])


def nvml_h100s(count: int = 2) -> FakeNvml:
    device = query_csv_device("nvidia-smi-query-csv_h100_590.48.01.csv")
    return FakeNvml(
        device["driver_version"], cuda_from_banner("nvidia-smi_h100_590.48.01.txt"), [device] * count
    )


def nvml_one_gpu_lost() -> FakeNvml:
    fake = nvml_h100s(2)
    fake.devices[1] = pynvml.NVML_ERROR_GPU_IS_LOST
    return fake


def nvml_ecc_errors() -> FakeNvml:
    """The H100 record with the counters a public report gives for a failing A100: 27 volatile (805
    aggregate) uncorrectable ECC errors and remapped_rows.failure=1 (SOURCES.md); the rest as captured."""
    fake = nvml_h100s(2)
    broken = dict(fake.devices[1])  # type: ignore[arg-type]
    broken.update(
        {
            "ecc.errors.uncorrected.volatile.total": "27",
            "ecc.errors.uncorrected.aggregate.total": "805",
            "remapped_rows.failure": "Yes",
        }
    )
    fake.devices[1] = broken
    return fake


def nvml_lifetime_ecc_only() -> FakeNvml:
    """nvml_ecc_errors' GPU after its rows were remapped and the GPU reset: the aggregate count (805) stays,
    the volatile count starts again at 0, no remap pending or failed (the state NVIDIA's memory error
    management guide describes after a successful remap)."""
    fake = nvml_ecc_errors()
    repaired = dict(fake.devices[1])  # type: ignore[arg-type]
    repaired.update({"ecc.errors.uncorrected.volatile.total": "0", "remapped_rows.failure": "No"})
    fake.devices[1] = repaired
    return fake


def nvml_busy() -> FakeNvml:
    fake = nvml_h100s(2)
    fake.devices[0] = with_processes(
        fake.devices[0],  # type: ignore[arg-type]
        "nvidia-smi-query-compute-apps-csv_h100-mig_590.48.01.csv",
    )
    return fake


def nvml_busy_without_v3() -> FakeNvml:
    """The busy H100s on a driver whose NVML lacks nvmlDeviceGetComputeRunningProcesses_v3."""
    fake = nvml_busy()
    fake.no_v3_processes = True
    return fake


def nvml_busy_r535_layout_break() -> FakeNvml:
    """The busy H100s on driver 535.54.03 (the A100 MIG capture's driver, telegraf a100-sxm4-v12.xml), one of
    the drivers whose _v3 process query writes the v3 struct without a version bump."""
    fake = nvml_busy()
    fake.driver = "535.54.03"
    fake.v3_layout_break = True
    return fake


def nvml_old_driver() -> FakeNvml:
    driver, cuda, fields = xml_device("nvidia-smi-q-x_tesla-t4_515.105.01.xml")
    return FakeNvml(driver, cuda, [fields], old_driver=True)


def nvml_mig() -> FakeNvml:
    device = query_csv_device("nvidia-smi-query-csv_h100-mig_590.48.01.csv")
    device["mig_devices"] = json.dumps(mig_uuids("nvidia-smi-L_h100-mig_590.48.01.txt"))
    return FakeNvml(device["driver_version"], cuda_from_banner("nvidia-smi_h100_590.48.01.txt"), [device])


def nvml_h100x8_r535() -> FakeNvml:
    """8x H100 on driver 535.161.08 (CUDA 12.2) in a KubeRay pod; cc 9.0 from the H100 capture."""
    cc = query_csv_device("nvidia-smi-query-csv_h100_590.48.01.csv")["compute_cap"]
    driver, cuda, devices = table_devices("nvidia-smi_h100x8_535.161.08_kuberay-pod.txt", compute_cap=cc)
    return FakeNvml(driver, cuda, devices)


def nvml_h100x8_fabric(state: str) -> FakeNvml:
    """The 8x H100 of `nvml_h100x8_r535`, each GPU's fabric in `state` ("In Progress": nvidia-fabricmanager
    dead at boot, NVIDIA/NVSentinel#883 and #889)."""
    fake = nvml_h100x8_r535()
    fake.devices = [{**d, "fabric.state": state} for d in fake.devices if not isinstance(d, int)]
    return fake


H100X8_TABLE = "nvidia-smi_h100x8_535.161.08_kuberay-pod.txt"


def nvml_h100x8_one_missing() -> FakeNvml:
    """The 8x H100 with their Bus-Ids; NVML lists seven: the last fell off the bus."""
    fake = nvml_h100x8_r535()
    ids = table_bus_ids(H100X8_TABLE)
    fake.devices = [{**d, "pci.bus_id": b} for d, b in zip(fake.devices, ids, strict=True)][:-1]  # type: ignore[dict-item]
    return fake


def nvml_query_csv(fixture: str, banner: str, count: int = 1) -> FakeNvml:
    """`count` GPUs like the one of a real `--query-gpu` capture; the CUDA version from its plain banner."""
    device = query_csv_device(fixture)
    return FakeNvml(device["driver_version"], cuda_from_banner(banner), [device] * count)


def nvml_xml(fixture: str) -> FakeNvml:
    driver, cuda, fields = xml_device(fixture)
    return FakeNvml(driver, cuda, [fields])


def nvml_table(fixture: str, **extra: str) -> FakeNvml:
    driver, cuda, devices = table_devices(fixture, **extra)
    return FakeNvml(driver, cuda, devices)


def nvml_wsl2_two_3090() -> FakeNvml:
    """What the WSL2 `nvidia-smi` capture shows: 2x RTX 3090, Windows driver 537.13, CUDA 12.2."""
    text = real("nvidia-smi_wsl2_rtx3090x2_535.103-drv537.13_CUT.txt")
    driver = re.search(r"Driver Version: (\S+)", text)
    assert driver
    devices = [
        {"name": m.group(2).strip(), "persistence_mode": "Enabled" if m.group(3) == "On" else "Disabled"}
        for m in re.finditer(r"^\|\s+(\d+)\s+(NVIDIA [^|]*?)\s+(On|Off)\s+\|", text, re.M)
    ]
    return FakeNvml(
        driver.group(1), cuda_from_banner("nvidia-smi_wsl2_rtx3090x2_535.103-drv537.13_CUT.txt"), devices
    )


def nvml_failing(code: int) -> FakeNvml:
    return FakeNvml(init_error=code)


def snapshot(fake: FakeNvml) -> DriverSnapshot:
    return nvml_probe.collect(lib=fake)


def nvml_a100x8_nvlink(
    down: Mapping[int, int] | None = None, errors: Mapping[int, str] | None = None
) -> FakeNvml:
    """The 8x A100-SXM4-80GB of a real `nvidia-smi nvlink -s` (leptonai/gpud testdata), all twelve links of
    each up at 25 GB/s. `down` marks GPU -> link `<inactive>`; `errors` gives GPU -> `nvlink.errors` JSON.
    Both are changes to the capture (no public capture of a down link or of `nvlink -e` counts was found)."""
    devices = nvlink_status("nvidia-smi-nvlink-s_a100-sxm4-80gbx8.txt")
    for gpu, link in (down or {}).items():
        links = json.loads(devices[gpu]["nvlink"])
        links[link] = "<inactive>"
        devices[gpu]["nvlink"] = json.dumps(links)
    for gpu, counts in (errors or {}).items():
        devices[gpu]["nvlink.errors"] = counts
    # the same product's `nvidia-smi topo -m` (AWS p4d.24xlarge: 8x A100 SXM4, NV12 between every two)
    return FakeNvml(devices=devices, topology=topo_matrix("topo-m_aws-p4d-24xlarge_a100x8.txt"))


def nvml_two_over_pcie(refused: int | None = None) -> FakeNvml:
    """The two healthy GPUs with the pair's facts of a real 2-GPU `nvidia-smi topo -m` (2x RTX 5090, PHB:
    through the CPU's host bridge; club-3090#1229). `refused`: NVML's P2P read / write status for the pair
    (a change to the capture, which shows none; e.g. NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED)."""
    fake = nvml_two_healthy()
    fake.topology = topo_matrix("topo-m_rtx5090x2-pcie.txt")
    if refused is not None:
        fake.p2p_refused[(0, 1)] = refused
    return fake
