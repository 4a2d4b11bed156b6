"""The C allocator's settings for the serving process (glibc only; elsewhere nothing happens).

Python keeps small objects in its own arenas, but every buffer over 512 bytes (reply bodies,
rendered text, compressed pieces, arrays of values) comes from the C allocator. glibc gives
each thread that allocates its own heap (up to 8 per core), and a heap's freed pages stay in
the process until its top is free. A refresh decodes, renders and compresses in worker threads,
so after one refresh several heaps each keep the high-water mark of what their thread held.
Three settings bring that back (docs/performance.md, at 5,000 resources in-process: RSS
222 -> 154 MB, peak 251 -> 168 MB):

- at most ``ARENAS`` heaps (``mallopt(M_ARENA_MAX)``): threads share them, so the pages one
  thread freed serve the next thread's buffers;
- buffers from ``MMAP_THRESHOLD`` bytes up in pages of their own (``M_MMAP_THRESHOLD``), given
  back when freed: glibc otherwise raises that threshold to the largest block freed (a reply
  body: tens of megabytes), and the next such blocks are carved from the heaps, where the
  pages stay;
- ``malloc_trim(0)`` after a render that followed a change: free pages anywhere in the heaps
  go back to the system (``madvise``), not only those at the top.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

ARENAS = 2
# Reply bodies (tens of MB at 5,000 resources) above it; a /metrics body's unsent rest, which
# asyncio copies on every scrape, below it (at 128 kB each scrape mapped and faulted its pages:
# system CPU per scrape 0.57 -> 1.76 ms at 5,000 resources).
MMAP_THRESHOLD = 4 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc's own adjustment would pair with it
_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

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


def tune_heaps() -> bool:
    """Share ``ARENAS`` heaps between all threads, keep large buffers out of them, and let
    ``trim`` work; False when the C library is not glibc. Called by ``tune_for_serving``
    (not in tests: one process)."""
    global _enabled
    libc = _libc()
    if libc is None:
        return False
    libc.mallopt(_M_ARENA_MAX, ARENAS)
    libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    _enabled = True
    return True


def trim() -> None:
    """Give the C heaps' free pages back to the system, once ``tune_heaps`` ran (ctypes
    releases the GIL during the call: run it off the event loop, it walks every heap)."""
    libc = _libc() if _enabled else None
    if libc is not None:
        libc.malloc_trim(0)
