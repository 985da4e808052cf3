"""Writing what the tool produces (reports, termination messages, bundles) without harming what was there.

The contract ("Files the tool writes"): a regular file or a missing path is replaced atomically, so a reader
never sees half of one; a device node, a FIFO or a symlink is written through, never replaced (`--json
/dev/stdout`, a FIFO a log shipper reads, `/dev/null`), and never waited on past the deadline: a FIFO without
a reader gets a note, not a hang. A new file gets the mode the umask gives (the training job that reads an
init container's report may run as another user); an existing file keeps its mode.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
import tempfile
import time
from pathlib import Path

# How long a write through a FIFO or device may block when no deadline is given (a slow reader).
DEFAULT_WAIT_S = 10.0


class WriteError(OSError):
    """Why the output could not be written: `strerror` is the reason in a few words, without the path."""


def _umask() -> int:
    # Linux >= 4.7 shows it in /proc/self/status; os.umask can only read it by setting it, which a thread
    # creating a file at that moment (the watchdog's report, say) would see, so that is the fallback.
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def shown(path: str | Path, limit: int = 200) -> str:
    """A path as a one-line message shows it: control characters escaped, a huge one shortened."""
    text = ascii(str(path))[1:-1] if not str(path).isprintable() else str(path)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(err: OSError) -> str:
    return err.strerror or str(err)


def write_output(path: str | Path, data: str | bytes, deadline: float | None = None) -> None:
    """Write `data` to `path` as the contract says; raises WriteError (callers name the path).

    `deadline` is a time.monotonic() value: a write through a FIFO or device gives up when it passes.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise WriteError(err.errno, _describe(err)) from None
    if info is None or stat.S_ISREG(info.st_mode):
        _replace_atomically(target, payload, None if info is None else stat.S_IMODE(info.st_mode))
        return
    if stat.S_ISDIR(info.st_mode):
        raise WriteError(errno.EISDIR, "it is a directory")
    if stat.S_ISSOCK(info.st_mode):
        raise WriteError(errno.EINVAL, "it is a socket")
    # a symlink, FIFO or device node: written through
    _write_through(target, payload, deadline if deadline is not None else time.monotonic() + DEFAULT_WAIT_S)


def _replace_atomically(target: Path, payload: bytes, keep_mode: int | None) -> None:
    """Temp file in the same folder, fsync, rename: a crash or a kill leaves the old file or the new one."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:100]}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        if keep_mode is not None and err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            # a writable file in a folder we may not write (the kubelet's /dev/termination-log under a
            # non-root user, a read-only root filesystem): in place is the only way, and it is ours to write
            try:
                _write_in_place(target, payload)
                return
            except OSError as again:
                err = again
        raise WriteError(err.errno, _describe(err)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            # mkstemp makes 0600; the file gets what a plain open() would have given it
            os.fchmod(handle.fileno(), keep_mode if keep_mode is not None else 0o666 & ~_umask())
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.replace(tmp, target)
        except OSError as err:
            if err.errno not in (errno.EBUSY, errno.EXDEV):
                raise
            # a bind-mounted single file (the kubelet's /dev/termination-log): it can only be written in place
            Path(tmp).unlink(missing_ok=True)
            _write_in_place(target, payload)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise WriteError(err.errno, _describe(err)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_in_place(target: Path, payload: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)


def _write_through(target: Path, payload: bytes, deadline: float) -> None:
    """Open without creating or truncating anything and write, never blocking past the deadline."""
    try:
        # O_NONBLOCK: opening a FIFO without a reader fails at once (ENXIO) instead of waiting for one
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise WriteError(err.errno, "a FIFO that nobody reads; nothing was written") from None
        if err.errno == errno.ENOENT:
            raise WriteError(err.errno, "a symlink to a missing file; nothing was written") from None
        raise WriteError(err.errno, _describe(err)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):  # a symlink to a regular file: that file, in place
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
        view = memoryview(payload)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WriteError(errno.ETIMEDOUT, "the reader stopped reading before the deadline; cut short")
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                select.select([], [fd], [], min(left, 1.0))
                continue
            view = view[written:]
    except WriteError:
        raise
    except OSError as err:
        raise WriteError(err.errno, _describe(err)) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
