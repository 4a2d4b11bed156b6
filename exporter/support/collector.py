"""Full garbage collections at quiet moments, not in the middle of a refresh (serving only).

A full collection visits every object the collector tracks. At rest that is the daemon's own
long-lived state, a short pause. In the middle of a refresh it is also every reply, record and
range the polls hold at that moment, and the pause stops every thread, event loop included,
many times as long (docs/performance.md#optimisations, 14).
So once ``defer_full_collections`` ran (``tune_for_serving``):

- Python starts a full collection by itself only after ``FULL_AFTER`` middle ones (a safety
  net); young and middle collections run as before;
- the renderer reports each render that followed a change (``changed``) and each one that did
  not (``quiet``: nothing was published for its idle interval, the polls' replies are freed).
  The first quiet render after a change runs a full collection; so does a change when none
  ran for ``OVERDUE_SECONDS`` since the first change owed one (no quiet moment came);
- the first full collection at least ``FREEZE_AFTER_SECONDS`` after start-up (every area has
  polled by then) also freezes what survives (``gc.freeze``): the state kept for good
  (ledgers, interned label tuples, records) leaves every later collection.
"""

from __future__ import annotations

import gc
import time

FULL_AFTER = 10_000  # middle collections between automatic full ones (Python's default: 10)
OVERDUE_SECONDS = 60.0
FREEZE_AFTER_SECONDS = 120.0


class _State:
    enabled = False
    started = 0.0
    owed_since: float | None = None  # the first change since the last full collection
    frozen = False


_state = _State()


def defer_full_collections(young: int, middle: int) -> None:
    """Collection thresholds ``young``/``middle`` as given, full collections deferred to quiet
    moments; called by ``tune_for_serving`` (not in tests: one process)."""
    gc.set_threshold(young, middle, FULL_AFTER)
    _state.enabled, _state.started = True, time.monotonic()
    _state.owed_since, _state.frozen = None, False


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
    _collect(now)
    return True


def quiet(now: float | None = None) -> bool:
    """A render with nothing changed: the full collection owed, if any, runs now. True when
    one ran."""
    if not _state.enabled or _state.owed_since is None:
        return False
    _collect(time.monotonic() if now is None else now)
    return True


def frozen() -> bool:
    """Whether the survivors were frozen after start-up."""
    return _state.frozen


def _collect(now: float) -> None:
    gc.collect()
    _state.owed_since = None
    if not _state.frozen and now - _state.started >= FREEZE_AFTER_SECONDS:
        gc.freeze()
        _state.frozen = True
