"""CUDA's JIT cache as this process would use it: where the driver keeps the kernels it compiles from PTX,
whether it can write there, how much it already holds and how much it may keep.

Facts from NVIDIA's CUDA Programming Guide, "CUDA Environment Variables"
(https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html):
CUDA_CACHE_PATH defaults to ~/.nv/ComputeCache on Linux; CUDA_CACHE_MAXSIZE defaults to 1 GiB on desktop and
server platforms (256 MiB on embedded ones and in older releases), at most 4 GiB; CUDA_CACHE_DISABLE=1 turns
the cache off. A kernel bigger than the cache is not cached; older entries are evicted for newer ones.

Not under --root: the cache that matters is the one of the process that will run TensorFlow (this one's
child), wherever the host facts are read from. Read with the runtime facts, so a report records it for replay.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = (".nv", "ComputeCache")  # under $HOME
CUDA_DEFAULT_MAXSIZE = 1 << 30  # desktop / server; embedded platforms and older releases: 256 MiB
CUDA_MAX_MAXSIZE = 4 << 30
_WALK_LIMIT = 20_000  # files counted at most: a cache is thousands of entries, a wrong path could be a disk


@dataclass(frozen=True)
class JitCache:
    path: str | None  # None: CUDA_CACHE_PATH unset and no HOME to put the default under
    path_source: str  # "CUDA_CACHE_PATH" or "default (~/.nv/ComputeCache)"
    exists: bool
    writable: bool  # the folder, or the nearest existing one above it, lets this user create entries
    used_bytes: int | None  # what it holds now; None where unreadable
    maxsize_bytes: int | None  # CUDA_CACHE_MAXSIZE as set (None: CUDA's default)
    maxsize_text: str | None  # as written, when not a number CUDA would read
    disabled: bool  # CUDA_CACHE_DISABLE=1
    filesystem: str | None  # the mount's type (tmpfs, overlay, ext4, ...): how long the cache lives

    @property
    def maxsize_effective(self) -> int:
        return self.maxsize_bytes if self.maxsize_bytes is not None else CUDA_DEFAULT_MAXSIZE

    @property
    def usable(self) -> bool:
        return self.path is not None and self.writable and not self.disabled

    @property
    def warm(self) -> bool:
        """It holds compiled kernels from an earlier start (whether TensorFlow's, it cannot tell)."""
        return self.usable and bool(self.used_bytes)

    @property
    def lifetime(self) -> str:
        """How long what is written there lives, as far as the mount type says."""
        if self.filesystem == "tmpfs":
            return "memory (tmpfs): gone at reboot or with the pod"
        if self.filesystem == "overlay":
            return "the container's writable layer: gone with the container"
        return "a mounted file system" if self.filesystem else "unknown"


def _mount_type(path: Path, mounts: str) -> str | None:
    """The type of the mount holding `path`: the longest mount point above it in /proc/self/mounts."""
    best, kind = -1, None
    text = str(path)
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = text == point or text.startswith(point.rstrip("/") + "/")
        if inside and len(point) > best:
            best, kind = len(point), fields[2]
    return kind


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _used_bytes(path: Path) -> int | None:
    """The bytes of the files under `path`, counting at most _WALK_LIMIT files (a lower bound beyond)."""
    total = counted = 0
    try:
        for folder, _dirs, files in os.walk(path):
            for name in files[: _WALK_LIMIT - counted]:
                total += os.lstat(os.path.join(folder, name)).st_size
            counted += len(files)
            if counted >= _WALK_LIMIT:
                break
    except OSError:
        return None
    return total


def read_jit_cache(env: Mapping[str, str], mounts: str) -> JitCache:
    """`mounts`: /proc/self/mounts' text (empty where unreadable)."""
    if env.get("CUDA_CACHE_PATH"):
        path: Path | None = Path(env["CUDA_CACHE_PATH"])
        source = "CUDA_CACHE_PATH"
    else:
        home = env.get("HOME")
        path = Path(home, *DEFAULT_DIR) if home else None
        source = "default (~/.nv/ComputeCache)"
    raw = env.get("CUDA_CACHE_MAXSIZE")
    maxsize = int(raw) if raw is not None and raw.strip().isdigit() else None
    disabled = env.get("CUDA_CACHE_DISABLE", "").strip() == "1"
    if path is None:
        return JitCache(
            None, source, False, False, None, maxsize, raw if maxsize is None else None, disabled, None
        )
    exists = path.is_dir()
    nearest = _existing(path)
    writable = os.access(nearest, os.W_OK | os.X_OK) and nearest.is_dir()
    return JitCache(
        path=str(path),
        path_source=source,
        exists=exists,
        writable=writable,
        used_bytes=_used_bytes(path) if exists else 0,
        maxsize_bytes=maxsize,
        maxsize_text=raw if raw is not None and maxsize is None else None,
        disabled=disabled,
        filesystem=_mount_type(nearest.resolve(), mounts),
    )
