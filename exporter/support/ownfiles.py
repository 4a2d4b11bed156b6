"""Reading the files the daemon keeps beside its state file (the state file, its cursor file,
the audit record, the charts file, the remote-write queue).

Each is read whole at start, on the thread that starts the daemon: only a regular file is read
(a FIFO, a device or a directory put at its path raises instead of blocking the start or
reading without end), and no more than ``limit`` bytes of it.
"""

from __future__ import annotations

import os
import stat

# Far above what any of them holds (docs/performance.md#how-cost-grows-with-resources): a file
# longer than this is not one the daemon wrote.
OWN_FILE_LIMIT = 1 << 30


class NotOurFile(OSError):
    """The path holds something the daemon never writes there."""


def read_own(path: str, limit: int = OWN_FILE_LIMIT) -> bytes:
    """The bytes of the regular file ``path``; raises FileNotFoundError when it is absent,
    ``NotOurFile`` when it is not a regular file or longer than ``limit``, OSError otherwise."""
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotOurFile(f"{path!r} is not a regular file (a FIFO, a device or a directory)")
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                raise NotOurFile(f"{path!r} is longer than {limit} bytes")
        return b"".join(parts)
    finally:
        os.close(fd)
