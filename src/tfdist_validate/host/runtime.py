"""What kind of machine is this: bare host, container (which engine), Kubernetes pod, WSL1/WSL2, and what GPU
plumbing the NVIDIA container toolkit (or WSL) left under --root.

Every read goes through `root`, so tests build the host they need in a temp dir (STYLE.md practice 4).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfdist_validate.host import iommu, pci
from tfdist_validate.host.jit_cache import JitCache, read_jit_cache
from tfdist_validate.host.kmsg import KernelLog, read_kernel_log

# Where the toolkit, the GKE device plugin and distro packages put the driver's user-space libraries.
LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
)
DRIVER_LIBS = ("libnvidia-ml.so.1", "libcuda.so.1")
# The GKE device plugin bind-mounts the driver here without running ldconfig, so ld.so(8) finds these only
# through LD_LIBRARY_PATH (NVIDIA's CUDA images set /usr/local/nvidia/lib:/usr/local/nvidia/lib64); the
# distro directories above are the loader's defaults or in its cache (the toolkit runs ldconfig).
UNCACHED_LIB_DIRS = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")
WSL_LIB_DIR = "/usr/lib/wsl/lib"
SERVICE_ACCOUNT_DIRS = (
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "/run/secrets/kubernetes.io/serviceaccount",
)

# cgroup path fragments that name the engine (cgroup v1, or v2 without a private cgroup namespace)
_CGROUP_ENGINES = (
    ("kubepods", "kubernetes"),
    ("libpod-", "podman"),
    ("/libpod_parent", "podman"),
    ("/docker/", "docker"),
    ("docker-", "docker"),
    ("cri-containerd-", "containerd"),
    ("/containerd/", "containerd"),
    ("crio-", "cri-o"),
    ("/lxc/", "lxc"),
    ("lxc.payload", "lxc"),
)
_GPU_NODE = re.compile(r"^nvidia(\d+)$")
_NVRM = re.compile(r"NVRM version:\s*(?P<text>.*?)\s+(?P<version>\d+\.\d+(?:\.\d+)?)\s+")


@dataclass(frozen=True)
class WslFacts:
    version: int  # 1 or 2
    kernel: str
    dxg: bool  # /dev/dxg: the GPU paravirtualization device
    libcuda: bool  # /usr/lib/wsl/lib/libcuda.so.1, provided by the Windows driver
    libnvidia_ml: bool
    nvidia_smi: str | None  # /usr/lib/wsl/lib/nvidia-smi, usually not on PATH
    # a Linux driver installed inside WSL: its libcuda.so.1 shadows the Windows driver's one
    shadowing_libcuda: tuple[str, ...] = ()


@dataclass(frozen=True)
class CudaMask:
    value: str | None  # CUDA_VISIBLE_DEVICES as set, None when unset
    hides_all: bool
    reason: str = ""


@dataclass(frozen=True)
class NodeAccess:
    path: str
    mode: int  # permission bits: 0o666 by default, NVreg_DeviceFileMode (e.g. 0o660) when set
    uid: int
    gid: int  # NVreg_DeviceFileGID, often the video or render group where the mode is 0660


@dataclass(frozen=True)
class Credentials:
    """This process's effective uid and groups, from /proc/self/status under root."""

    uid: int
    gids: tuple[int, ...]


@dataclass(frozen=True)
class RuntimeFacts:
    kind: str  # host | docker | podman | containerd | cri-o | lxc | container | kubernetes
    engine: str | None  # the container engine, when known
    container_evidence: tuple[str, ...]
    kubernetes: bool
    kubernetes_evidence: tuple[str, ...]
    wsl: WslFacts | None
    gpu_nodes: tuple[str, ...]  # /dev/nvidia0, /dev/nvidia1, ...
    control_nodes: tuple[str, ...]  # /dev/nvidiactl, /dev/nvidia-uvm, ...
    kernel_driver: str | None  # the NVRM line of /proc/driver/nvidia/version
    kernel_driver_version: str | None
    libraries: Mapping[str, tuple[str, ...]]  # library name -> where found under root
    nvidia_visible_devices: str | None
    nvidia_driver_capabilities: str | None
    cuda_mask: CudaMask
    notes: tuple[str, ...] = field(default=())
    # LD_LIBRARY_PATH's directories; None in reports written before it was recorded (then not judged)
    loader_path: tuple[str, ...] | None = None
    # the GPU device nodes' modes and this process's credentials; None where unknown (not judged)
    node_access: tuple[NodeAccess, ...] | None = None
    credentials: Credentials | None = None
    # NVIDIA GPUs on the PCI bus (/sys/bus/pci/devices); None where unreadable or in older reports
    pci_gpus: tuple[str, ...] | None = None
    # Xid / SXid events since boot from /dev/kmsg (host/kmsg.py); None in older reports (then not judged)
    kernel_log: KernelLog | None = None
    # the IOMMU / ACS parameters of /proc/cmdline (host/iommu.py); None where unreadable or in older reports
    kernel_iommu: tuple[str, ...] | None = None
    # CUDA's JIT cache for this process (host/jit_cache.py); None in older reports
    jit_cache: JitCache | None = None

    @property
    def in_container(self) -> bool:
        return self.kind != "host"

    @property
    def wsl2(self) -> bool:
        return self.wsl is not None and self.wsl.version == 2

    @property
    def nvswitches(self) -> tuple[str, ...]:
        """/dev/nvidia-nvswitch0, ...: the host has an NVSwitch fabric (HGX / DGX), which
        nvidia-fabricmanager must bring up before CUDA can start (nvidia-nvswitchctl is the control node)."""
        return tuple(n for n in self.control_nodes if re.fullmatch(r"/dev/nvidia-nvswitch\d+", n))

    def has_library(self, name: str) -> bool:
        return bool(self.libraries.get(name))

    def off_loader_path(self, name: str) -> tuple[str, ...]:
        """Where `name` was injected when every such place is one the dynamic loader does not search."""
        found = self.libraries.get(name, ())
        if not found or self.loader_path is None:
            return ()
        searched = [d for d in found if d not in UNCACHED_LIB_DIRS or d.rstrip("/") in self.loader_path]
        return () if searched else tuple(found)

    def denied_nodes(self) -> tuple[NodeAccess, ...]:
        """The GPU device nodes this process may not open read-write (CUDA and NVML open them O_RDWR)."""
        creds = self.credentials
        if creds is None or self.node_access is None or creds.uid == 0:
            return ()

        def allowed(node: NodeAccess) -> bool:
            shift = 6 if node.uid == creds.uid else 3 if node.gid in creds.gids else 0
            return (node.mode >> shift) & 0o6 == 0o6

        return tuple(node for node in self.node_access if not allowed(node))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "engine": self.engine,
            "container": self.in_container,
            "container_evidence": list(self.container_evidence),
            "kubernetes": self.kubernetes,
            "kubernetes_evidence": list(self.kubernetes_evidence),
            "wsl": self.wsl.version if self.wsl else None,
            "gpu_device_nodes": list(self.gpu_nodes),
            "control_device_nodes": list(self.control_nodes),
            "kernel_driver": self.kernel_driver,
            "kernel_driver_version": self.kernel_driver_version,
            "driver_libraries": {k: list(v) for k, v in self.libraries.items()},
            "nvidia_visible_devices": self.nvidia_visible_devices,
            "nvidia_driver_capabilities": self.nvidia_driver_capabilities,
        }


def _under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def _read(root: Path, path: str) -> str:
    try:
        return _under(root, path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _exists(root: Path, path: str) -> bool:
    # lexists: a dangling symlink (a toolkit mount point seen from a host tree) still says "injected"
    p = _under(root, path)
    return p.exists() or p.is_symlink()


def read_runtime(root: Path, env: Mapping[str, str]) -> RuntimeFacts:
    engine, container_evidence = _container(root, env)
    kubernetes, kube_evidence = _kubernetes(root, env, engine)
    if kubernetes:
        kind = "kubernetes"
    elif engine:
        kind = engine
    else:
        kind = "host"
    gpu_nodes, control_nodes = _device_nodes(root)
    kernel_line, kernel_version = parse_proc_driver_version(_read(root, "/proc/driver/nvidia/version"))
    libraries = {lib: tuple(d for d in LIB_DIRS if _exists(root, f"{d}/{lib}")) for lib in DRIVER_LIBS}
    return RuntimeFacts(
        kind=kind,
        engine=engine,
        container_evidence=tuple(container_evidence),
        kubernetes=kubernetes,
        kubernetes_evidence=tuple(kube_evidence),
        wsl=_wsl(root),
        gpu_nodes=gpu_nodes,
        control_nodes=control_nodes,
        kernel_driver=kernel_line,
        kernel_driver_version=kernel_version,
        libraries=libraries,
        nvidia_visible_devices=env.get("NVIDIA_VISIBLE_DEVICES"),
        nvidia_driver_capabilities=env.get("NVIDIA_DRIVER_CAPABILITIES"),
        cuda_mask=cuda_mask(env.get("CUDA_VISIBLE_DEVICES")),
        loader_path=tuple(d.rstrip("/") for d in env.get("LD_LIBRARY_PATH", "").split(":") if d),
        node_access=_node_access(
            root, gpu_nodes + tuple(n for n in control_nodes if n in CUDA_CONTROL_NODES)
        ),
        pci_gpus=pci.nvidia_gpus(root),
        kernel_log=read_kernel_log(root),
        kernel_iommu=iommu.kernel_params(cmdline) if (cmdline := _read(root, "/proc/cmdline")) else None,
        credentials=_credentials(_read(root, "/proc/self/status")),
        jit_cache=read_jit_cache(env, _read_own_mounts()),
    )


def _read_own_mounts() -> str:
    """This process's mounts (never under --root: the JIT cache is this process's, host/jit_cache.py)."""
    try:
        return Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# The control nodes a CUDA program (and NVML) opens read-write besides /dev/nvidiaN. Others under /dev/nvidia*
# are not needed to train and are often root-only by design (/dev/nvidia-caps/nvidia-cap1 for MIG
# management, nvidia-modeset): judging them would fail every non-root run on such hosts.
CUDA_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm")


def _node_access(root: Path, nodes: tuple[str, ...]) -> tuple[NodeAccess, ...]:
    found = []
    for node in nodes:
        try:
            st = _under(root, node).stat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        found.append(NodeAccess(node, st.st_mode & 0o777, st.st_uid, st.st_gid))
    return tuple(found)


def _credentials(status: str) -> Credentials | None:
    # "Uid:\treal\teffective\tsaved\tfs", "Gid:" alike, "Groups:\t44 109 10001" (proc(5))
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    try:
        uid = int(fields["Uid"].split()[1])
        gids = [int(fields["Gid"].split()[1]), *(int(g) for g in fields.get("Groups", "").split())]
    except (KeyError, IndexError, ValueError):
        return None
    return Credentials(uid, tuple(dict.fromkeys(gids)))


def _container(root: Path, env: Mapping[str, str]) -> tuple[str | None, list[str]]:
    evidence: list[str] = []
    engine: str | None = None
    if _exists(root, "/.dockerenv"):
        evidence.append("/.dockerenv")
        engine = "docker"
    if _exists(root, "/run/.containerenv"):
        evidence.append("/run/.containerenv")
        # podman writes engine="podman-<version>"; other tools (buildah, cri-o) reuse the file
        text = _read(root, "/run/.containerenv")
        match = re.search(r'engine="([a-z-]+?)(?:-\d|")', text)
        engine = engine or (match.group(1) if match else "podman")
    for path in ("/proc/1/cgroup", "/proc/self/cgroup"):
        for line in _read(root, path).splitlines():
            cgroup = line.split(":", 2)[-1]
            for fragment, name in _CGROUP_ENGINES:
                if fragment in cgroup:
                    evidence.append(f"{path}: {cgroup}")
                    if engine is None and name != "kubernetes":
                        engine = name
                    break
    declared = env.get("container")  # podman, systemd-nspawn and lxc set it for PID 1
    if declared:
        evidence.append(f"container={declared}")
        engine = engine or declared
    if evidence and engine is None:
        engine = "container"
    return engine, _dedupe(evidence)


def _kubernetes(root: Path, env: Mapping[str, str], engine: str | None) -> tuple[bool, list[str]]:
    evidence = [d for d in SERVICE_ACCOUNT_DIRS if _under(root, d).is_dir()]
    if env.get("KUBERNETES_SERVICE_HOST"):
        evidence.append("KUBERNETES_SERVICE_HOST")
    for path in ("/proc/1/cgroup", "/proc/self/cgroup"):
        if "kubepods" in _read(root, path):
            evidence.append(f"{path}: kubepods")
    return bool(evidence), _dedupe(evidence)


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _device_nodes(root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    dev = _under(root, "/dev")
    try:
        names = sorted(p.name for p in dev.iterdir() if p.name.startswith("nvidia"))
    except OSError:
        return (), ()
    gpus = sorted((n for n in names if _GPU_NODE.match(n)), key=lambda n: int(n[6:]))
    control = [n for n in names if not _GPU_NODE.match(n)]
    return tuple(f"/dev/{n}" for n in gpus), tuple(f"/dev/{n}" for n in control)


def parse_proc_driver_version(text: str) -> tuple[str | None, str | None]:
    """The NVRM line of /proc/driver/nvidia/version, and the version number on it."""
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            match = _NVRM.search(line + " ")
            return line.strip(), match.group("version") if match else None
    return None, None


def _wsl(root: Path) -> WslFacts | None:
    kernel = _read(root, "/proc/version").strip()
    lowered = kernel.lower()
    if "microsoft" not in lowered:
        return None
    # WSL2 kernels say "microsoft-standard" (4.19: no -WSL2 suffix yet); WSL1's fake kernel says "-Microsoft"
    version = 2 if "microsoft-standard" in lowered or "wsl2" in lowered else 1
    smi = f"{WSL_LIB_DIR}/nvidia-smi"
    shadowing = tuple(
        f"{d}/libcuda.so.1"
        for d in LIB_DIRS
        if d != WSL_LIB_DIR and _is_real_file(_under(root, f"{d}/libcuda.so.1"))
    )
    return WslFacts(
        version=version,
        kernel=kernel.split(" (")[0],
        dxg=_exists(root, "/dev/dxg"),
        libcuda=_exists(root, f"{WSL_LIB_DIR}/libcuda.so.1"),
        libnvidia_ml=_exists(root, f"{WSL_LIB_DIR}/libnvidia-ml.so.1"),
        nvidia_smi=smi if _exists(root, smi) else None,
        shadowing_libcuda=shadowing,
    )


def _is_real_file(path: Path) -> bool:
    """A regular file, not a link into /usr/lib/wsl/lib (which is how WSL's own ldconfig setup looks)."""
    if path.is_symlink():
        try:
            return WSL_LIB_DIR.lstrip("/") not in str(path.readlink())
        except OSError:
            return False
    return path.is_file()


def cuda_mask(value: str | None) -> CudaMask:
    """CUDA enumerates CUDA_VISIBLE_DEVICES up to the first invalid entry, so "", "-1" or a leading
    non-index (Slurm's "NoDevFiles") hides every GPU from CUDA, and so from TensorFlow."""
    if value is None:
        return CudaMask(None, False)
    first = value.split(",")[0].strip()
    if not first:
        return CudaMask(value, True, "CUDA_VISIBLE_DEVICES is set but empty")
    if first.startswith("-"):
        return CudaMask(value, True, f"CUDA_VISIBLE_DEVICES={value} starts with a negative index")
    if not (first.isdigit() or first.startswith(("GPU-", "MIG-"))):
        return CudaMask(value, True, f"CUDA_VISIBLE_DEVICES={value} starts with {first!r}, not a GPU")
    return CudaMask(value, False)
