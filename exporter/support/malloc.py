"""The C allocator's settings for the serving process (glibc only; elsewhere nothing happens).

Python keeps small objects in its own arenas, but every buffer over 512 bytes (reply bodies,
rendered text, compressed pieces, arrays of values) comes from the C allocator. glibc gives
each thread that allocates its own heap (up to 8 per core), and a heap's freed pages stay in
the process until its top is free. A refresh decodes, renders and compresses in worker threads,
so after one refresh several heaps each keep the high-water mark of what their thread held.
Three settings bring that back (the figures:
docs/performance.md#c-heaps-and-label-tuples-at-5000-resources and
docs/performance.md#the-mmap-threshold-fitted-above-the-metrics-body):

- at most ``ARENAS`` heaps (``mallopt(M_ARENA_MAX)``): threads share them, so the pages one
  thread freed serve the next thread's buffers;
- buffers from ``MMAP_THRESHOLD`` bytes up in pages of their own (``M_MMAP_THRESHOLD``), given
  back when freed: glibc otherwise raises that threshold to the largest block freed (a reply
  body: tens of megabytes), and the next such blocks are carved from the heaps, where the
  pages stay; raised above the /metrics body when that is larger (``fit``), or every scrape
  would map and fault in the copy of its unsent rest;
- ``malloc_trim(0)`` after a render that followed a change: free pages anywhere in the heaps
  go back to the system (``madvise``), not only those at the top.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

ARENAS = 2
# Large reply bodies above it; a /metrics body's unsent rest, which asyncio copies on every
# scrape, below it (a lower threshold mapped and faulted those pages at each scrape). Raised
# above a larger body by ``fit``. See docs/performance.md#c-heaps-and-label-tuples-at-5000-resources
# and docs/performance.md#the-mmap-threshold-fitted-above-the-metrics-body.
MMAP_THRESHOLD = 4 << 20
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's largest on 64-bit systems
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc's own adjustment would pair with it
_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

_enabled = False
_threshold = MMAP_THRESHOLD


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
    _set_threshold(libc, MMAP_THRESHOLD)
    _enabled = True
    return True


def _set_threshold(libc: ctypes.CDLL, threshold: int) -> None:
    global _threshold
    libc.mallopt(_M_MMAP_THRESHOLD, threshold)
    libc.mallopt(_M_TRIM_THRESHOLD, 2 * threshold)
    _threshold = threshold


def fit(largest: int) -> int:
    """Keep buffers of up to ``largest`` bytes (the largest /metrics body, whose unsent rest
    asyncio copies on each scrape) in the heaps: the mmap threshold a quarter above it, never
    below ``MMAP_THRESHOLD`` nor above ``MMAP_THRESHOLD_MAX``, once ``tune_heaps`` ran. Larger
    buffers (reply bodies) keep pages of their own. Returns the threshold in force."""
    libc = _libc() if _enabled else None
    wanted = min(MMAP_THRESHOLD_MAX, max(MMAP_THRESHOLD, largest + largest // 4))
    if libc is not None and wanted != _threshold:
        _set_threshold(libc, wanted)
    return _threshold


def trim() -> None:
    """Give the C heaps' free pages back to the system, once ``tune_heaps`` ran (ctypes
    releases the GIL during the call: run it off the event loop, it walks every heap)."""
    libc = _libc() if _enabled else None
    if libc is not None:
        libc.malloc_trim(0)
