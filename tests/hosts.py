"""Hosts to validate, built in a temp dir for --root, and the probes' recorded answers.

Everything a scenario contains comes from tests/fixtures/real/ (see SOURCES.md there): file contents are
copied from real /proc and `ls /dev` outputs, NVML's answers are read from real nvidia-smi query outputs,
and TensorFlow's answers are a real recording of the probe. The NVML stand-in is handed to
`tfdist_validate.probes.nvml.collect(lib=...)`; pynvml itself is not patched, and its real exception classes
are what the stand-in raises.
"""

from __future__ import annotations

import csv
import ctypes
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

from tfdist_validate.host.gpus import DriverSnapshot
from tfdist_validate.probes import Probes
from tfdist_validate.probes import nvml as nvml_probe
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.probes.tf_facts import MARKER, TfFacts, from_json
from tfdist_validate.tfsession import RecordedSession

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
MIB = 1024 * 1024


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------- host trees under --root


class HostTree:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def file(self, path: str, text: str = "") -> HostTree:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return self

    def dir(self, path: str) -> HostTree:
        (self.root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
        return self

    def symlink(self, path: str, to: str) -> HostTree:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(to)
        return self

    def dev_from_ls(self, fixture: str, keep: Callable[[str], bool] = lambda _n: True) -> HostTree:
        """Create /dev/nvidia* entries named by a real `ls` listing (plain files: only their names matter)."""
        for line in real(fixture).splitlines():
            match = re.search(r"(/dev/nvidia[\w-]*)\s*$", line)
            if match and keep(match.group(1)):
                self.file(match.group(1))
        return self

    def driver_libs(self, directory: str = "/usr/lib/x86_64-linux-gnu") -> HostTree:
        return self.file(f"{directory}/libcuda.so.1").file(f"{directory}/libnvidia-ml.so.1")


def two_gpu_nodes(name: str) -> bool:
    """The first two GPUs of the DGX-2 listing, with its control nodes."""
    return not re.search(r"nvidia(\d+)$", name) or name in ("/dev/nvidia0", "/dev/nvidia1")


@dataclass
class Host:
    """A scenario: a tree under root, the environment of the process, and the probes' answers."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)


def bare_host_no_driver(root: Path) -> Host:
    HostTree(root).dir("/dev").dir("/proc")
    return Host(root)


def bare_host_with_driver(root: Path) -> Host:
    tree = HostTree(root).file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    tree.dev_from_ls("ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt", two_gpu_nodes).driver_libs()
    return Host(root)


def docker_without_gpus(root: Path, host_driver: bool = True) -> Host:
    tree = HostTree(root).file("/.dockerenv").dir("/dev")
    if host_driver:  # docker does not mask /proc/driver: the host's driver is visible, its GPUs are not
        tree.file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    return Host(root, {"NVIDIA_VISIBLE_DEVICES": "all"})  # what CUDA base images set


def docker_with_toolkit(root: Path) -> Host:
    tree = HostTree(root).file("/.dockerenv").file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    tree.dev_from_ls("ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt", two_gpu_nodes).driver_libs()
    return Host(root, {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"})


def docker_one_gpu(root: Path) -> Host:
    tree = HostTree(root).file("/.dockerenv").file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    tree.dev_from_ls("ls-l-dev-nvidia_in-container_ollama-17069.txt").driver_libs()
    return Host(root, {"NVIDIA_VISIBLE_DEVICES": "all"})


def podman_without_gpus(root: Path) -> Host:
    HostTree(root).file("/run/.containerenv").dir("/dev")
    return Host(root, {"container": "podman"})


# the image's ENV LD_LIBRARY_PATH (Dockerfile), which the pod's process inherits
IMAGE_LD_LIBRARY_PATH = "/usr/local/nvidia/lib:/usr/local/nvidia/lib64"


def gke_pod_without_loader_path(root: Path) -> Host:
    """GKE's device plugin layout (/usr/local/nvidia/lib64, no ldconfig) in an image that does not put it on
    LD_LIBRARY_PATH: the libraries are there, the loader cannot find them."""
    host = kubernetes_pod(root, gpus=True)
    return Host(root, {k: v for k, v in host.env.items() if k != "LD_LIBRARY_PATH"})


def kubernetes_pod(root: Path, gpus: bool) -> Host:
    tree = HostTree(root).dir("/var/run/secrets/kubernetes.io/serviceaccount")
    tree.file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}
    if gpus:  # the device plugin passes the GPUs and the toolkit injects the driver's libraries
        tree.dev_from_ls("ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt", two_gpu_nodes)
        tree.driver_libs("/usr/local/nvidia/lib64")
        env["NVIDIA_VISIBLE_DEVICES"] = "GPU-00000000-0000-0000-0000-000000000000"
        env["LD_LIBRARY_PATH"] = IMAGE_LD_LIBRARY_PATH
    else:
        tree.dir("/dev")
    return Host(root, env)


def wsl2(root: Path, working: bool = True) -> Host:
    tree = HostTree(root).file("/proc/version", real("proc-version_wsl2_5.4.91-microsoft-standard-WSL2.txt"))
    tree.file("/dev/dxg")
    if working:
        for name in ("libcuda.so.1", "libnvidia-ml.so.1", "nvidia-smi"):
            tree.file(f"/usr/lib/wsl/lib/{name}")
    return Host(root)


def wsl1(root: Path) -> Host:
    HostTree(root).file("/proc/version", real("proc-version_wsl1_4.4.0-18985-Microsoft.txt"))
    return Host(root)


REAL_DRIVER = "proc-driver-nvidia-version_open-x86_64_565.57.01_ubuntu24.04.txt"


# ---------------------------------------------------------------- NVML stand-in


def _strip_unit(value: str) -> str:
    return re.sub(r"\s*(MiB|%|W|MHz|us)$", "", value.strip())


def query_csv_device(fixture: str, row: int = 0) -> dict[str, str]:
    """One GPU of a real `nvidia-smi --query-gpu=<all> --format=csv` capture, keyed by field name."""
    rows = list(csv.reader(real(fixture).splitlines(), skipinitialspace=True))
    names = [h.split(" [")[0] for h in rows[0]]
    return {n: _strip_unit(v) for n, v in zip(names, rows[1 + row], strict=True)}


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
        return _strip_unit(gpu.findtext(path) or "[N/A]")

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
    fields["clocks_throttle_reasons.active"] = hex(sum(_THROTTLE_BITS.get(t, 0) for t in active))
    fields["processes"] = json.dumps(
        [
            {"pid": int(p.findtext("pid") or 0), "used_memory": _strip_unit(p.findtext("used_memory") or "0")}
            for p in gpu.iterfind("processes/process_info")
            if (p.findtext("type") or "").startswith("C")  # NVML's compute-process list
        ]
    )
    return root.findtext("driver_version") or "", int(major) * 1000 + int(minor) * 10, fields


_THROTTLE_BITS = {"clocks_throttle_reason_gpu_idle": 0x1, "clocks_throttle_reason_sw_power_cap": 0x4}
_COMPUTE_MODES = {"Default": 0, "Exclusive_Thread": 1, "Prohibited": 2, "Exclusive_Process": 3}
_NA = {"[N/A]", "N/A", "[Not Supported]", "[Requested functionality has been deprecated]", ""}


def _nvml_error(code: int) -> pynvml.NVMLError:
    return pynvml.NVMLError(code)  # pynvml picks the real subclass, e.g. NVMLError_GpuIsLost


class FakeNvml:
    """The pynvml functions `probes.nvml` calls, answering from recorded nvidia-smi fields."""

    NVMLError = pynvml.NVMLError

    def __init__(
        self,
        driver: str = "",
        cuda: int = 0,
        devices: Sequence[Mapping[str, str] | int] = (),
        init_error: int | None = None,
        old_driver: bool = False,
        no_v3_processes: bool = False,
        v3_layout_break: bool = False,
    ) -> None:
        self.driver = driver
        self.cuda = cuda
        self.devices = list(devices)  # an int is the NVML error that device's handle raises
        self.init_error = init_error
        self.old_driver = old_driver  # no nvmlDeviceGetCurrentClocksEventReasons (added in NVML 12.2)
        # a driver without nvmlDeviceGetComputeRunningProcesses_v3: pynvml's own wrapper turns the missing
        # function into NVMLLibraryMismatchError (a plain Exception); _v2 answers
        self.no_v3_processes = no_v3_processes
        # drivers 535.43-535.86: _v3 writes 32-byte v3 entries that pynvml reads as 24-byte v2 ones
        self.v3_layout_break = v3_layout_break
        self.calls: list[str] = []

    def _field(self, handle: int, name: str) -> str:
        device = self.devices[handle]
        assert not isinstance(device, int)
        value = device.get(name, "[N/A]")
        if value in _NA:
            raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise _nvml_error(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        device = self.devices[index]
        if isinstance(device, int):
            raise _nvml_error(device)
        return index

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._field(h, "name")

    def nvmlDeviceGetUUID(self, h: int | tuple[int, int]) -> str:
        if isinstance(h, tuple):  # a MIG device handle (parent, slot)
            return self._mig_uuids(h[0])[h[1]]
        return self._field(h, "uuid")

    def _mig_uuids(self, h: int) -> list[str]:
        device = self.devices[h]
        assert not isinstance(device, int)
        return list(json.loads(device.get("mig_devices", "[]")))

    def nvmlDeviceGetMaxMigDeviceCount(self, h: int) -> int:
        return 7 if self._enabled(h, "mig.mode.current") else 0  # A100 / H100: up to seven MIG devices

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, slot: int) -> tuple[int, int]:
        if slot >= len(self._mig_uuids(h)):
            raise _nvml_error(pynvml.NVML_ERROR_NOT_FOUND)
        return (h, slot)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        total, used = float(self._field(h, "memory.total")), float(self._field(h, "memory.used"))
        return SimpleNamespace(total=int(total * MIB), used=int(used * MIB), free=int((total - used) * MIB))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        major, minor = self._field(h, "compute_cap").split(".")
        return int(major), int(minor)

    def _enabled(self, h: int, name: str) -> int:
        return 1 if self._field(h, name) in ("Enabled", "Yes", "On") else 0

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        mode = self._enabled(h, "mig.mode.current")
        return [mode, mode]

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        return self._enabled(h, "persistence_mode")

    def nvmlDeviceGetEccMode(self, h: int) -> list[int]:
        mode = self._enabled(h, "ecc.mode.current")
        return [mode, mode]

    def nvmlDeviceGetComputeMode(self, h: int) -> int:
        return _COMPUTE_MODES[self._field(h, "compute_mode")]

    def nvmlDeviceGetTotalEccErrors(self, h: int, error_type: int, counter_type: int) -> int:
        kind = "corrected" if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else "uncorrected"
        scope = "volatile" if counter_type == pynvml.NVML_VOLATILE_ECC else "aggregate"
        return int(self._field(h, f"ecc.errors.{kind}.{scope}.total"))

    def nvmlDeviceGetRetiredPages(self, h: int, cause: int) -> list[int]:
        name = "single_bit_ecc" if cause == 0 else "double_bit"
        return list(range(int(self._field(h, f"retired_pages.{name}.count"))))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: int) -> int:
        return self._enabled(h, "retired_pages.pending")

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple[int, int, int, int]:
        return (
            int(self._field(h, "remapped_rows.correctable")),
            int(self._field(h, "remapped_rows.uncorrectable")),
            self._enabled(h, "remapped_rows.pending"),
            self._enabled(h, "remapped_rows.failure"),
        )

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        if self.no_v3_processes:
            return pynvml.throwOnVersionMismatch(self._function_not_found)(h)  # type: ignore[no-any-return]
        if self.v3_layout_break:
            return _misread_as_v2(self._processes(h))
        return self._processes(h)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, h: int) -> list[SimpleNamespace]:
        return self._processes(h)

    @staticmethod
    def _function_not_found(_h: int) -> list[SimpleNamespace]:
        raise _nvml_error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

    def _processes(self, h: int) -> list[SimpleNamespace]:
        device = self.devices[h]
        assert not isinstance(device, int)
        found = json.loads(device.get("processes", "[]"))
        return [
            SimpleNamespace(pid=p["pid"], usedGpuMemory=int(float(p["used_memory"]) * MIB)) for p in found
        ]

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self._field(h, "pci.bus_id"))

    c_nvmlGpuFabricInfoV_t = pynvml.c_nvmlGpuFabricInfoV_t
    c_nvmlGpuFabricInfo_t = pynvml.c_nvmlGpuFabricInfo_t

    def nvmlDeviceGetGpuFabricInfoV(self, h: int, info: Any) -> int:
        """Fills the struct from nvidia-smi's `fabric.state` / `fabric.status` (the --query-gpu names);
        GPUs without them (before Hopper) answer NOT_SUPPORTED, as NVML does."""
        state = self._field(h, "fabric.state")
        status = self.devices[h].get("fabric.status", "[N/A]")  # type: ignore[union-attr]
        target = info._obj  # ctypes.byref's referent
        target.state = {v: k for k, v in nvml_probe.FABRIC_STATES.items()}[state]
        target.status = 0 if status in ("Success", "[N/A]") else pynvml.NVML_ERROR_UNKNOWN
        return 0

    nvmlDeviceGetGpuFabricInfo = nvmlDeviceGetGpuFabricInfoV

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        if self.old_driver:
            raise _nvml_error(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        return int(self._field(h, "clocks_event_reasons.active"), 16)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:
        device = self.devices[h]
        assert not isinstance(device, int)
        value = device.get("clocks_throttle_reasons.active") or device.get("clocks_event_reasons.active")
        if not value or value in _NA:
            raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int(value, 16)


class _ProcessInfoV3(ctypes.Structure):
    """nvmlProcessInfo_v3_t as drivers 535.43-535.86 write it (XuehaiPan/nvitop#79 quotes the struct)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    ]


def _misread_as_v2(procs: list[SimpleNamespace]) -> list[SimpleNamespace]:
    """What pynvml returns there: the driver's v3 array read with pynvml's own v2 struct, byte for byte."""
    written = (_ProcessInfoV3 * len(procs))(
        *(_ProcessInfoV3(p.pid, p.usedGpuMemory, 0xFFFFFFFF, 0xFFFFFFFF, 0) for p in procs)
    )
    read = (pynvml.c_nvmlProcessInfo_v2_t * len(procs)).from_buffer(written)
    return [SimpleNamespace(pid=e.pid, usedGpuMemory=e.usedGpuMemory) for e in read]


def with_processes(device: Mapping[str, str], compute_apps_fixture: str) -> dict[str, str]:
    """Attach the processes of a real `--query-compute-apps` capture to a device."""
    rows = list(csv.reader(real(compute_apps_fixture).splitlines(), skipinitialspace=True))
    names = [h.split(" [")[0] for h in rows[0]]
    apps = [dict(zip(names, r, strict=True)) for r in rows[1:]]
    procs = [{"pid": int(a["pid"]), "used_memory": _strip_unit(a["used_gpu_memory"])} for a in apps]
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


def mig_uuids(fixture: str) -> list[str]:
    """The MIG device UUIDs of a real `nvidia-smi -L` listing."""
    return re.findall(r"\(UUID: (MIG-[0-9a-f-]+)\)", real(fixture))


def nvml_mig() -> FakeNvml:
    device = query_csv_device("nvidia-smi-query-csv_h100-mig_590.48.01.csv")
    device["mig_devices"] = json.dumps(mig_uuids("nvidia-smi-L_h100-mig_590.48.01.txt"))
    return FakeNvml(device["driver_version"], cuda_from_banner("nvidia-smi_h100_590.48.01.txt"), [device])


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


def nvml_h100x8_r535() -> FakeNvml:
    """8x H100 on driver 535.161.08 (CUDA 12.2) in a KubeRay pod; cc 9.0 from the H100 capture."""
    cc = query_csv_device("nvidia-smi-query-csv_h100_590.48.01.csv")["compute_cap"]
    driver, cuda, devices = table_devices("nvidia-smi_h100x8_535.161.08_kuberay-pod.txt", compute_cap=cc)
    return FakeNvml(driver, cuda, devices)


def hgx_h100_fabric_manager_stopped(root: Path) -> Host:
    """An HGX H100 host: eight GPU nodes and the NVSwitch nodes (names from a real NVSwitch host's listing;
    HGX H100 has four NVSwitch chips)."""
    tree = HostTree(root).file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    keep = re.compile(r"/dev/nvidia(?:[0-7]|ctl|-uvm|-uvm-tools|-nvswitch[0-3]|-nvswitchctl)$")
    tree.dev_from_ls("ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt", lambda n: bool(keep.match(n))).driver_libs()
    return Host(root)


def nvml_h100x8_fabric(state: str) -> FakeNvml:
    """The 8x H100 of `nvml_h100x8_r535`, each GPU's fabric in `state` ("In Progress": nvidia-fabricmanager
    dead at boot, NVIDIA/NVSentinel#883 and #889)."""
    fake = nvml_h100x8_r535()
    fake.devices = [{**d, "fabric.state": state} for d in fake.devices if not isinstance(d, int)]
    return fake


H100X8_TABLE = "nvidia-smi_h100x8_535.161.08_kuberay-pod.txt"


def table_bus_ids(fixture: str) -> list[str]:
    """The Bus-Id column of a real plain `nvidia-smi` table, in GPU order."""
    return re.findall(r"^\|\s+\d+\s+NVIDIA [^|]*\|\s+([0-9A-Fa-f]{8}:[0-9A-Fa-f:.]+)\s", real(fixture), re.M)


def sys_pci_gpus(tree: HostTree, bus_ids: Sequence[str]) -> HostTree:
    """/sys/bus/pci/devices entries of NVIDIA 3D controllers (the kernel's formats, pci-sysfs.c)."""
    for bus_id in bus_ids:
        where = f"/sys/bus/pci/devices/{bus_id.lower()[-12:]}"
        tree.file(f"{where}/vendor", "0x10de\n").file(f"{where}/class", "0x030200\n")
    return tree


def hgx_h100_host(root: Path) -> Host:
    """The HGX H100 host of the fabric scenario, with its eight GPUs on the PCI bus at the R535 table's
    Bus-Ids."""
    host = hgx_h100_fabric_manager_stopped(root)
    sys_pci_gpus(HostTree(root), table_bus_ids(H100X8_TABLE))
    return host


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


# ---------------------------------------------------------------- nvidia-smi and TensorFlow answers


def smi_answers(
    stdout: str = "", stderr: str = "", returncode: int | None = None
) -> Callable[[Sequence[str], float], CommandResult]:
    """A command runner that answers every nvidia-smi call the same way; None = not installed."""

    def run(argv: Sequence[str], _timeout: float) -> CommandResult:
        if returncode is None:
            return CommandResult(tuple(argv), None, "", "", f"{argv[0]}: No such file or directory")
        return CommandResult(tuple(argv), returncode, stdout, stderr)

    return run


SMI_MISSING = smi_answers()


def smi_error(fixture: str, returncode: int) -> Callable[[Sequence[str], float], CommandResult]:
    # nvidia-smi's exit codes from its man page: 9 driver not loaded, 12 NVML library not found, 255 other
    return smi_answers(stdout=real(fixture), returncode=returncode)


def recorded_tf(gpus: int | None = None, log_fixture: str | None = None) -> TfFacts:
    """The probe's real answer on this project's GPU-less container (TensorFlow 2.21.0, CUDA 12.5.1 build).

    gpus=N replaces the empty GPU list with the reference document's PhysicalDevice names
    ("/physical_device:GPU:0", ...), which is what the same probe reports where TensorFlow sees N GPUs.
    """
    record = json.loads(real("tf-facts_tf-2.21.0_docker-no-gpu.json"))
    line = record["stdout_line"]
    assert line.startswith(MARKER)
    facts = from_json(json.loads(line[len(MARKER) :]), record["stderr"])
    if gpus is not None:
        facts = replace(facts, gpus=tuple(f"/physical_device:GPU:{i}" for i in range(gpus)))
    if log_fixture is not None:
        facts = replace(facts, log=real(log_fixture))
    return facts


@dataclass(frozen=True)
class ProbeSet:
    """What a scenario injects: the probes (NVML, commands) and the TensorFlow session's recorded facts."""

    probes: Probes
    tf: RecordedSession


def probes(
    nvml: FakeNvml | None = None,
    smi: Callable[[Sequence[str], float], CommandResult] = SMI_MISSING,
    tf: TfFacts | None = None,
    tf_calls: list[float] | None = None,
) -> ProbeSet:
    """`tf_calls` gets the timeout of each time the TensorFlow layer asks for TensorFlow's facts."""
    fake = nvml or nvml_failing(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    session = RecordedSession(tf or recorded_tf(), env={"PATH": "/usr/bin:/bin"})
    if tf_calls is not None:
        session.calls = tf_calls
    return ProbeSet(Probes(run_command=smi, nvml=lambda: nvml_probe.collect(lib=fake)), session)


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


# ---------------------------------------------------------------- running `check` on a scenario


@dataclass
class CheckRun:
    code: int
    report: dict[str, Any]
    stdout: str
    stderr: str

    def check(self, check_id: str) -> dict[str, Any]:
        return next(c for c in self.report["checks"] if c["id"] == check_id)


def run_check(host: Host, probe_set: ProbeSet, tmp: Path, command: str = "check", **options: str) -> CheckRun:
    """`tfdist-validate check --root <tree> [--option value ...]` in-process, with the probes injected
    (`command="run"`: the same for `run`; with injected TensorFlow facts it starts no TensorFlow process)."""
    import io

    from tfdist_validate import app, settings

    given = {"root": str(host.root), "termination_log": str(tmp / "termination-log"), **options}
    env = {"PATH": "/usr/bin:/bin", "NO_COLOR": "1", **host.env}
    resolved = settings.resolve(given, env)
    report_path = tmp / "report.json"
    resolved = replace(resolved, json=str(report_path))
    out, err = io.StringIO(), io.StringIO()
    code = app.execute(
        command, resolved, env, probes=probe_set.probes, tf=probe_set.tf, stdout=out, stderr=err
    )
    return CheckRun(code, json.loads(report_path.read_text()), out.getvalue(), err.getvalue())
