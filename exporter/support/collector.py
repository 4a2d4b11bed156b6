"""Full garbage collections at quiet moments, not in the middle of a refresh (serving only).

A full collection visits every object the collector tracks. At rest that is the daemon's own
long-lived state, a short pause. In the middle of a refresh it is also every reply, record and
range the polls hold at that moment, and the pause stops every thread, event loop included,
many times as long
(docs/performance.md#full-collections-deferred-the-dvr-fragment-off-the-loop).
So once ``defer_full_collections`` ran (``tune_for_serving``):

- Python starts a full collection by itself only after ``FULL_AFTER`` middle ones (a safety
  net); young and middle collections run as before;
- the renderer reports each render that followed a change (``changed``) and each one that did
  not (``quiet``: nothing was published for its idle interval, the polls' replies are freed).
  The first quiet render after a change runs a full collection; so does a change when none
  ran for ``OVERDUE_SECONDS`` since the first change owed one (no quiet moment came);
- either waits while the collector tracks more than ``SMALL_HEAP`` objects and more than
  twice what survived the last full collection (a poll holds its replies: the pause would be
  as many times as long), until the collection is ``LATE_SECONDS`` owed;
- the first full collection at least ``FREEZE_AFTER_SECONDS`` after start-up (every area has
  polled by then) also freezes what survives (``gc.freeze``): the state kept for good
  (ledgers, interned label tuples, records) leaves every later collection.

Objects that can hold no reference cycle are left out of the collector's lists altogether
(``untrack``): what a full collection visits is what is left, and a poll's per-resource rows
and counters are most of the heap at scale
(docs/performance.md#what-a-full-collection-visits-left-out-of-it).
"""

from __future__ import annotations

import ctypes
import gc
import sys
import time
from collections.abc import Callable
from functools import cache

FULL_AFTER = 10_000  # middle collections between automatic full ones (Python's default: 10)
OVERDUE_SECONDS = 60.0
FREEZE_AFTER_SECONDS = 120.0
SMALL_HEAP = 50_000  # tracked objects a full collection may meet at any moment
LATE_SECONDS = 600.0  # owed this long, a full collection runs whatever the heap holds


class _State:
    enabled = False
    started = 0.0
    owed_since: float | None = None  # the first change since the last full collection
    frozen = False
    rest = 0  # tracked objects that survived the last full collection


_state = _State()


def defer_full_collections(young: int, middle: int) -> None:
    """Collection thresholds ``young``/``middle`` as given, full collections deferred to quiet
    moments; called by ``tune_for_serving`` (not in tests: one process)."""
    gc.set_threshold(young, middle, FULL_AFTER)
    _state.enabled, _state.started = True, time.monotonic()
    _state.owed_since, _state.frozen, _state.rest = None, False, 0


def changed(now: float | None = None) -> bool:
    """A render followed a change: a full collection is owed, run now if overdue. True when
    one ran. ``now``: ``time.monotonic()`` (tests pass it)."""
    if not _state.enabled:
        return False
    now = time.monotonic() if now is None else now
    if _state.owed_since is None:
        _state.owed_since = now
        return False
    if now - _state.owed_since < OVERDUE_SECONDS:
        return False
    return _collect_if_small(now)


def quiet(now: float | None = None) -> bool:
    """A render with nothing changed: the full collection owed, if any, runs now. True when
    one ran."""
    if not _state.enabled or _state.owed_since is None:
        return False
    return _collect_if_small(time.monotonic() if now is None else now)


@cache
def _untrack_one() -> Callable[[object], None] | None:
    """CPython's ``PyObject_GC_UnTrack`` (None elsewhere: nothing is untracked)."""
    if sys.implementation.name != "cpython":
        return None
    fn = ctypes.pythonapi.PyObject_GC_UnTrack
    fn.argtypes = (ctypes.py_object,)
    fn.restype = None
    return fn


def untrack(*objects: object) -> None:
    """Leave ``objects`` out of every garbage collection from now on, in any process (tests
    included): what ``dealloc`` does to an object just before freeing it, done early.

    Only for objects that cannot be part of a reference cycle: what they refer to refers to
    nothing but its type (strings, numbers, bytes, arrays, or objects untracked by the same
    rule), so each is freed by its reference count as before. An untracked object's
    references still count as held for what it refers to, so untracking never frees
    anything early; at worst a cycle through it would be kept (a leak, never a crash). The
    caller's types decide what the objects may hold, frozen where they can. Python tracks a
    container again by itself when given something it must track (a dict given a list)."""
    fn = _untrack_one()
    if fn is not None:
        for obj in objects:
            fn(obj)


def frozen() -> bool:
    """Whether the survivors were frozen after start-up."""
    return _state.frozen


def _collect_if_small(now: float) -> bool:
    """Run the full collection owed unless the heap is large and it is not yet late."""
    owed = now - (now if _state.owed_since is None else _state.owed_since)
    if owed < LATE_SECONDS and len(gc.get_objects()) > max(SMALL_HEAP, 2 * _state.rest):
        return False
    _collect(now)
    return True


def _collect(now: float) -> None:
    gc.collect()
    _state.owed_since = None
    if not _state.frozen and now - _state.started >= FREEZE_AFTER_SECONDS:
        gc.freeze()
        _state.frozen = True
    _state.rest = len(gc.get_objects())
