"""Hosts to validate, built in a temp dir for --root, and the probes' recorded answers.

Everything a scenario contains comes from tests/fixtures/real/ (see SOURCES.md there): file contents are
copied from real /proc and `ls /dev` outputs, NVML's answers are read from real nvidia-smi query outputs,
and TensorFlow's answers are a real recording of the probe. The NVML stand-in is handed to
`tfdist_validate.probes.nvml.collect(lib=...)`; pynvml itself is not patched, and its real exception classes
are what the stand-in raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pynvml

# The NVML stand-in and the recorded outputs live in modules of their own; the names scenarios use are
# re-exported, so a test reaches every host and its probes' answers through `hosts`.
from fake_nvml import (
    FakeNvml as FakeNvml,
)
from nvml_scenarios import (
    H100X8_TABLE as H100X8_TABLE,
    nvml_a100x8_nvlink as nvml_a100x8_nvlink,
    nvml_busy as nvml_busy,
    nvml_busy_r535_layout_break as nvml_busy_r535_layout_break,
    nvml_busy_without_v3 as nvml_busy_without_v3,
    nvml_ecc_errors as nvml_ecc_errors,
    nvml_failing as nvml_failing,
    nvml_h100s as nvml_h100s,
    nvml_h100x8_fabric as nvml_h100x8_fabric,
    nvml_h100x8_one_missing as nvml_h100x8_one_missing,
    nvml_h100x8_r535 as nvml_h100x8_r535,
    nvml_lifetime_ecc_only as nvml_lifetime_ecc_only,
    nvml_mig as nvml_mig,
    nvml_old_driver as nvml_old_driver,
    nvml_one_gpu_lost as nvml_one_gpu_lost,
    nvml_query_csv as nvml_query_csv,
    nvml_table as nvml_table,
    nvml_two_healthy as nvml_two_healthy,
    nvml_two_over_pcie as nvml_two_over_pcie,
    nvml_wsl2_two_3090 as nvml_wsl2_two_3090,
    nvml_xml as nvml_xml,
    snapshot as snapshot,
)
from recorded_outputs import (
    mig_uuids as mig_uuids,
    query_csv_device as query_csv_device,
    real as real,
    table_bus_ids as table_bus_ids,
)
from tfdist_validate.probes import Probes, nvml as nvml_probe
from tfdist_validate.probes.commands import CommandResult
from tfdist_validate.probes.tf_facts import MARKER, TfFacts, from_json
from tfdist_validate.tfsession import RecordedSession

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


def hgx_h100_fabric_manager_stopped(root: Path) -> Host:
    """An HGX H100 host: eight GPU nodes and the NVSwitch nodes (names from a real NVSwitch host's listing;
    HGX H100 has four NVSwitch chips)."""
    tree = HostTree(root).file("/proc/driver/nvidia/version", real(REAL_DRIVER))
    keep = re.compile(r"/dev/nvidia(?:[0-7]|ctl|-uvm|-uvm-tools|-nvswitch[0-3]|-nvswitchctl)$")
    tree.dev_from_ls("ls-1-dev-nvidia_dgx2-16gpu-nvswitch.txt", lambda n: bool(keep.match(n))).driver_libs()
    return Host(root)


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
