"""Reading a file the user named (a settings file, a report to replay) without trusting what it is.

A FIFO would block the open or the read for ever, a device such as /dev/zero never ends, and a huge file
eats memory before any check runs: only a regular file of at most `limit` bytes is read, and a file that
grows while it is read is cut at the limit and refused.
"""

from __future__ import annotations

import errno
import os
import stat


class InputError(OSError):
    """Why the file was not read: `strerror` is the reason in a few words, without the path."""


def read_regular_file(path: str, limit: int) -> bytes:
    if not path.strip() or "\0" in path:
        raise InputError(errno.EINVAL, "not a usable path")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a terminal must not become ours
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise InputError(err.errno, err.strerror or str(err)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(errno.EISDIR, "Is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(errno.EINVAL, "not a regular file (a FIFO, device or socket is never read)")
        if info.st_size > limit:
            raise InputError(errno.EFBIG, f"{info.st_size} bytes, more than the {limit} allowed")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise InputError(errno.EFBIG, f"more than the {limit} bytes allowed (it grew while read)")
    return b"".join(chunks)
