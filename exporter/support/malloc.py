"""The C allocator's settings for the serving process (glibc only; elsewhere nothing happens).

Python keeps small objects in its own arenas, but every buffer over 512 bytes (reply bodies,
rendered text, compressed pieces, arrays of values) comes from the C allocator. glibc gives
each thread that allocates its own heap (up to 8 per core), and a heap's freed pages stay in
the process until its top is free. A refresh decodes, renders and compresses in worker threads,
so after one refresh several heaps each keep the high-water mark of what their thread held.
Two settings bring that back (docs/performance.md, at 5,000 resources: RSS 222 -> 164 MB):

- at most ``ARENAS`` heaps (``mallopt(M_ARENA_MAX)``): threads share them, so the pages one
  thread freed serve the next thread's buffers;
- ``malloc_trim(0)`` after a render that followed a change: free pages anywhere in the heaps
  go back to the system (``madvise``), not only those at the top.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h

_enabled = False


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None  # not glibc (musl, macOS)
    return libc


def limit_arenas() -> bool:
    """Share ``ARENAS`` heaps between all threads and let ``trim`` work; False when the C
    library is not glibc. Called by ``tune_for_serving`` (not in tests: one process)."""
    global _enabled
    libc = _libc()
    if libc is None:
        return False
    libc.mallopt(_M_ARENA_MAX, ARENAS)
    _enabled = True
    return True


def trim() -> None:
    """Give the C heaps' free pages back to the system, once ``limit_arenas`` ran (ctypes
    releases the GIL during the call: run it off the event loop, it walks every heap)."""
    libc = _libc() if _enabled else None
    if libc is not None:
        libc.malloc_trim(0)
