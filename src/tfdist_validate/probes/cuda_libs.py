"""Which CUDA libraries would TensorFlow load here, from where, in which version: read in TensorFlow's child.

TensorFlow opens its CUDA libraries by soname at run time (XLA's tsl dso_loader: `dlopen("libcublas.so.12")`,
https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/dso_loader.cc) and registers no GPU unless
cudart, cuBLAS, cuBLASLt, cuFFT, cuSOLVER, cuSPARSE and cuDNN all open (dlopen_checker.cc beside it: "Cannot
dlopen some GPU libraries"). The pip wheels find them through the RUNPATH of TensorFlow's own shared objects
(`$ORIGIN/../nvidia/cublas/lib`, ...: the `nvidia-*-cu12` wheels of the and-cuda extra). This probe follows
the dynamic loader's order for such a dlopen (LD_LIBRARY_PATH, the caller's RUNPATH, ld.so.cache, the default
folders), then loads each library found by its path, which proves its own dependencies resolve (cuSOLVER needs
nvJitLink), and asks the library its version; no GPU is touched. libcuda and NVML come from the host's driver
(the NVIDIA container toolkit, or GKE's /usr/local/nvidia on LD_LIBRARY_PATH): they are looked up, not loaded.

Also read here: the installed `nvidia-*` wheels (importlib.metadata), the CUDA the libraries really are.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import re
import struct
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from tfdist_validate.probes.commands import CommandRunner, run_command

LDCONFIG_TIMEOUT_S = 10.0
DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)
# TensorFlow's shared objects whose RUNPATH a dlopen from TensorFlow's code is resolved with.
TF_OBJECTS = (
    "libtensorflow_framework.so.2",
    "libtensorflow_cc.so.2",
    "python/_pywrap_tensorflow_internal.so",
)
# How to ask a library its version, without a GPU.
_PROPERTY = "property"  # xGetProperty(MAJOR=0 / MINOR=1 / PATCH=2, int*)
_INT_OUT = "int_out"  # f(int*) -> encoded int
_RETURNS = "returns"  # size_t f(void)
_TWO_INTS = "two_ints"  # f(int* major, int* minor)


class Library(NamedTuple):
    stem: str  # libSTEM.so.MAJOR
    majors: Mapping[int, str]  # the soname's major per CUDA major ({}: cuDNN, whose major the build names)
    kind: str  # how to ask its version ("" : it cannot say)
    symbol: str
    required: bool  # TensorFlow registers no GPU without it (dlopen_checker.cc), or the all-reduce needs it
    role: str
    loaded_by: tuple[str, ...] = ()  # () : TensorFlow opens it; else the libraries that do (their RUNPATH)


CUDA12, CUDA13 = 12, 13
LIBRARIES = (
    Library("cudart", {CUDA12: "12", CUDA13: "13"}, _INT_OUT, "cudaRuntimeGetVersion", True, "CUDA runtime"),
    Library("cublas", {CUDA12: "12", CUDA13: "13"}, _PROPERTY, "cublasGetProperty", True, "cuBLAS"),
    Library("cublasLt", {CUDA12: "12", CUDA13: "13"}, _RETURNS, "cublasLtGetVersion", True, "cuBLASLt"),
    Library("cufft", {CUDA12: "11", CUDA13: "12"}, _PROPERTY, "cufftGetProperty", True, "cuFFT"),
    Library("cusolver", {CUDA12: "11", CUDA13: "12"}, _PROPERTY, "cusolverGetProperty", True, "cuSOLVER"),
    Library("cusparse", {CUDA12: "12", CUDA13: "12"}, _PROPERTY, "cusparseGetProperty", True, "cuSPARSE"),
    Library("cudnn", {}, _RETURNS, "cudnnGetVersion", True, "cuDNN"),
    Library("nccl", {CUDA12: "2", CUDA13: "2"}, _INT_OUT, "ncclGetVersion", True, "NCCL (the all-reduce)"),
    Library("cupti", {CUDA12: "12", CUDA13: "13"}, "", "", False, "CUPTI (the profiler)"),
    # needed by cuFFT, cuSOLVER and cuSPARSE (DT_NEEDED: their load above fails without it)
    Library(
        "nvJitLink",
        {CUDA12: "12", CUDA13: "13"},
        _TWO_INTS,
        "nvJitLinkVersion",
        True,
        "nvJitLink (cuFFT, cuSOLVER, cuSPARSE)",
        ("cufft", "cusolver", "cusparse"),
    ),
    # opened by cuDNN for its runtime-compiled (fused) kernels; without it only the precompiled engines run
    Library(
        "nvrtc",
        {CUDA12: "12", CUDA13: "13"},
        _TWO_INTS,
        "nvrtcVersion",
        False,
        "NVRTC (cuDNN's runtime-compiled kernels)",
        ("cudnn",),
    ),
)
# From the host's driver, never from a wheel: looked up only.
HOST_LIBRARIES = (("libcuda.so.1", "the CUDA driver"), ("libnvidia-ml.so.1", "NVML"))
_WHEEL = re.compile(r"^nvidia-[a-z0-9-]+-cu\d+$")


def runpath(path: Path) -> list[str]:
    """DT_RUNPATH (else DT_RPATH) of an ELF64 little-endian object, $ORIGIN expanded; [] if unreadable.
    Mapped, not read: libtensorflow_cc.so.2 is over 1 GB and only a few pages of it are needed."""
    try:
        with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            raw = _runpath_text(data)
    except (OSError, ValueError, struct.error):  # unreadable, empty (mmap), truncated
        return []
    origin = str(path.parent)
    return [
        os.path.normpath(p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin))
        for p in (raw or "").split(":")
        if p
    ]


def _runpath_text(data: mmap.mmap) -> str | None:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # ELF, 64-bit, little-endian
        return None
    phoff, phentsize, phnum = struct.unpack_from("<Q", data, 0x20)[0], *struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        ptype, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if ptype == 1:  # PT_LOAD
            loads.append((vaddr, offset, filesz))
        elif ptype == 2:  # PT_DYNAMIC
            dynamic = (offset, filesz)
    if dynamic is None:
        return None
    entries: dict[int, int] = {}
    for pos in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, pos)
        if tag == 0:  # DT_NULL
            break
        entries.setdefault(tag, value)
    strtab = next(
        (off + entries[5] - va for va, off, size in loads if va <= entries.get(5, -1) < va + size), None
    )  # DT_STRTAB, a virtual address: mapped to its file offset through the PT_LOAD that holds it
    which = entries.get(29, entries.get(15))  # DT_RUNPATH, DT_RPATH
    if strtab is None or which is None:
        return None
    start = strtab + which
    return bytes(data[start : data.find(b"\0", start)]).decode(errors="replace")


def ld_cache(run: CommandRunner = run_command) -> dict[str, str]:
    """soname -> path from ld.so.cache (`ldconfig -p`), x86-64 entries first."""
    found: dict[str, str] = {}
    for binary in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        ran = run([binary, "-p"], LDCONFIG_TIMEOUT_S)
        if ran.ok:
            for match in re.finditer(r"^\s*(\S+) \(([^)]*)\) => (\S+)$", ran.stdout, re.M):
                if "x86-64" in match.group(2) or match.group(1) not in found:
                    found[match.group(1)] = match.group(3)
            break
    return found


def _search(
    soname: str, stages: Sequence[tuple[str, Sequence[str]]], cache: Mapping[str, str]
) -> tuple[str, str]:
    """(path, how it was found) following the loader's order; ("", "") if nowhere."""
    for how, folders in stages:
        for folder in folders:
            candidate = os.path.join(folder, soname)
            if os.path.exists(candidate):
                return candidate, how
        if how == "RUNPATH" and soname in cache:  # ld.so.cache comes after the caller's RUNPATH
            return cache[soname], "ld.so.cache"
    if soname in cache:
        return cache[soname], "ld.so.cache"
    for folder in DEFAULT_DIRS:
        candidate = os.path.join(folder, soname)
        if os.path.exists(candidate):
            return candidate, "default folders"
    return "", ""


def _version(library: ctypes.CDLL, kind: str, symbol: str) -> str | None:
    try:
        function = getattr(library, symbol)
        if kind == _PROPERTY:
            parts = []
            for which in range(3):
                value = ctypes.c_int(0)
                if function(which, ctypes.byref(value)) != 0:
                    return None
                parts.append(value.value)
            return ".".join(map(str, parts))
        if kind == _INT_OUT:
            value = ctypes.c_int(0)
            return _decode(value.value) if function(ctypes.byref(value)) == 0 else None
        if kind == _RETURNS:
            function.restype = ctypes.c_size_t
            return _decode(int(function()))
        if kind == _TWO_INTS:
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            return (
                f"{major.value}.{minor.value}"
                if function(ctypes.byref(major), ctypes.byref(minor)) == 0
                else None
            )
    except (AttributeError, OSError):
        return None
    return None


def _decode(value: int) -> str | None:
    """CUDA's encodings: 12050 -> 12.5 (cudart); 90300 -> 9.3.0 (cuDNN 9, cuBLASLt); 22707 -> 2.27.7."""
    if value <= 0:
        return None
    if value < 10000:  # cuDNN 8, NCCL before 2.9: 1000 * major + 100 * minor + patch
        return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"
    if value < 20000:  # cudaRuntimeGetVersion: 1000 * major + 10 * minor
        return f"{value // 1000}.{value % 1000 // 10}"
    return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"


def _owners() -> dict[str, tuple[str, str]]:
    """A library file's real path -> (wheel, version) for the installed nvidia-* wheels."""
    owners: dict[str, tuple[str, str]] = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if not _WHEEL.match(name):
            continue
        for file in dist.files or ():
            if ".so" in file.name:
                owners[os.path.realpath(str(dist.locate_file(file)))] = (name, dist.version)
    return owners


def wheels() -> dict[str, str]:
    """The installed nvidia-*-cuNN wheels: name -> version."""
    found = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if _WHEEL.match(name):
            found[name] = dist.version
    return dict(sorted(found.items()))


def _record(
    library: Library, soname: str, path: str, how: str, owners: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    record: dict[str, Any] = {"soname": soname, "role": library.role, "required": library.required}
    record |= {"host": False, "path": path or None, "found_via": how or None, "loads": False, "error": None}
    record |= {"version": None, "wheel": None, "wheel_version": None}
    if not path:
        where = ", ".join(library.loaded_by) if library.loaded_by else "TensorFlow"
        record["error"] = (
            f"not found (LD_LIBRARY_PATH, the RUNPATH of {where}, ld.so.cache, {DEFAULT_DIRS[1]})"
        )
        # a wheel may hold it where that RUNPATH does not look (cuDNN 9.3's libraries look in
        # nvidia/nvrtc/lib, the NVRTC wheel installs nvidia/cuda_nvrtc/lib)
        stray = sorted(p for p in owners if os.path.basename(p).startswith(soname))
        if stray:
            record["path_outside_search"] = stray[0]
            record["wheel"], record["wheel_version"] = owners[stray[0]]
        return record
    try:
        loaded = ctypes.CDLL(path)
        record["loads"] = True
        record["version"] = _version(loaded, library.kind, library.symbol) if library.kind else None
    except OSError as err:
        record["error"] = str(err)
    record["wheel"], record["wheel_version"] = owners.get(os.path.realpath(path), (None, None))
    return record


def _runpath_of(paths: Sequence[str], stems: Sequence[str]) -> list[str]:
    """The RUNPATHs of the libraries `stems` resolved to, and of their siblings of the same stem (cuDNN's
    sub-libraries libcudnn_*.so.9 open NVRTC, not libcudnn.so.9 itself)."""
    folders: list[str] = []
    for stem, path in zip(stems, paths, strict=True):
        if path:
            for sibling in sorted(Path(path).parent.glob(f"lib{stem}*.so*")):
                folders += runpath(sibling)
    return list(dict.fromkeys(folders))


def inspect(
    tf_dir: Path, build_info: Mapping[str, Any], env: Mapping[str, str], run: CommandRunner = run_command
) -> list[dict[str, Any]]:
    """One record per library: soname, role, required, host (from the driver), path, found_via, loads,
    error, version, wheel, wheel_version."""
    cuda_major = int((re.findall(r"\d+", str(build_info.get("cuda_version") or "12")) or ["12"])[0])
    cudnn_major = (re.findall(r"\d+", str(build_info.get("cudnn_version") or "9")) or ["9"])[0]
    ld_path = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    tf_runpath = list(dict.fromkeys(p for obj in TF_OBJECTS for p in runpath(tf_dir / obj)))
    cache = ld_cache(run)
    owners = _owners()
    records: list[dict[str, Any]] = []
    resolved: dict[str, str] = {}
    for library in LIBRARIES:
        major = cudnn_major if library.stem == "cudnn" else library.majors.get(cuda_major, str(cuda_major))
        soname = f"lib{library.stem}.so.{major}"
        if library.loaded_by:
            loaders = [resolved.get(stem, "") for stem in library.loaded_by]
            callers = _runpath_of(loaders, library.loaded_by)
        else:
            callers = tf_runpath
        path, how = _search(soname, [("LD_LIBRARY_PATH", ld_path), ("RUNPATH", callers)], cache)
        resolved[library.stem] = path
        records.append(_record(library, soname, path, how, owners))
    for soname, role in HOST_LIBRARIES:
        path, how = _search(soname, [("LD_LIBRARY_PATH", ld_path)], cache)
        records.append(
            {"soname": soname, "role": role, "required": True, "host": True, "path": path or None}
            | {"found_via": how or None, "loads": None, "error": None, "version": None}
            | {"wheel": None, "wheel_version": None}
        )
    return records
