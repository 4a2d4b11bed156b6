"""A file replaced whole and atomically, made of parts: a part the file before holds unchanged
is copied from it, not made again.

A document is a sequence of pieces: text made now, or a ``Part`` whose ``key`` digests
everything its text is made from. ``PartFile.write`` writes the pieces to a temporary file
beside the target; a part whose key the file written last holds is read back from that file
(at the offset it was written at, checked against the CRC-32 it had then) instead of being
made, so a save does the Python work of the parts that changed and leaves the copying of the
rest to the kernel. Then fsync and rename over the target (``write_atomic_with``): never half
a file. The file written last is recognised by its device, inode, size and modification time;
one that anything else replaced or touched is not read from (every part is made again).
docs/performance.md (*The state file's save*) has the figures.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of text made by ``make``; two parts with the same ``key`` have the same text."""

    key: bytes
    make: Callable[[], str]


Piece = str | Part


@dataclass(frozen=True, slots=True)
class Written:
    """What one write did: parts made and parts copied from the file before; bytes in all
    and of them those copied."""

    made: int
    copied: int
    size: int
    copied_bytes: int


def write_atomic_with(path: str, fill: Callable[[BinaryIO], object]) -> None:
    """``fill`` a temporary file beside ``path``, fsync it and rename it over ``path``, then
    fsync the directory (a crash leaves the old file or the new one, never half a file)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    with open(tmp, "wb") as fh:
        fill(fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    try:
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


Stamp = tuple[int, int, int, int]  # device, inode, size, modification time (ns)


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class PartFile:
    """One file written by ``write``, which remembers where each part went for the next one.
    Not thread-safe: one thread writes (the refresh worker)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._where: dict[bytes, tuple[int, int, int]] = {}  # key: offset, length, CRC-32
        self._stamp: Stamp | None = None  # of the file as the last write left it

    def write(self, pieces: Iterable[Piece]) -> Written:
        """Replace the file with ``pieces`` (OSError when the disk refuses: the next write
        makes every part again)."""
        where: dict[bytes, tuple[int, int, int]] = {}
        made = copied = size = copied_bytes = 0
        before, old = self._where, self._open_before()
        self._where, self._stamp = {}, None  # a failed write leaves nothing to copy from

        def fill(fh: BinaryIO) -> None:
            nonlocal made, copied, size, copied_bytes
            for piece in pieces:
                if isinstance(piece, str):
                    data = piece.encode()
                else:
                    got = None if old is None else _copy(old, before.get(piece.key))
                    if got is None:
                        data, made = piece.make().encode(), made + 1
                    else:
                        data, copied, copied_bytes = got, copied + 1, copied_bytes + len(got)
                    where[piece.key] = (size, len(data), zlib.crc32(data))
                fh.write(data)
                size += len(data)

        try:
            write_atomic_with(self.path, fill)
        finally:
            if old is not None:
                os.close(old)
        with suppress(OSError):  # unseen, the next write makes every part
            self._where, self._stamp = where, _stamp(os.stat(self.path))
        return Written(made, copied, size, copied_bytes)

    def _open_before(self) -> int | None:
        """The file the last write left, open for reading (None: none, or it changed)."""
        if self._stamp is None:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            same = _stamp(os.fstat(fd)) == self._stamp
        except OSError:
            same = False
        if not same:
            os.close(fd)
            return None
        return fd


def _copy(fd: int, at: tuple[int, int, int] | None) -> bytes | None:
    """The part written at ``at`` (offset, length, CRC-32) in the file open as ``fd`` (None:
    not there, or not intact)."""
    if at is None:
        return None
    offset, length, crc = at
    try:
        data = os.pread(fd, length, offset)
    except OSError:
        return None
    if len(data) != length or zlib.crc32(data) != crc:
        return None
    return data
