"""collector.untrack: objects left out of every collection are still freed by their reference
count, and keep what they refer to alive. (The deferred full collections and the freeze:
tests/runtime/test_tuning.py, in a child process.)"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from array import array
from dataclasses import dataclass

from exporter.support.collector import untrack


@dataclass(slots=True, weakref_slot=True)
class Holder:
    values: object


def test_untracked_objects_are_left_out_of_the_collectors_lists() -> None:
    held = Holder(array("d", [1.0, 2.0]))
    assert gc.is_tracked(held)
    assert gc.is_tracked(held.values)
    untrack(held, held.values)
    assert not gc.is_tracked(held)
    assert not gc.is_tracked(held.values)
    assert all(o is not held for o in gc.get_objects())


def test_an_untracked_object_is_freed_by_its_last_reference() -> None:
    held = Holder(array("d", [1.0]))
    untrack(held)
    gone = weakref.ref(held)
    gc.disable()  # freed by the reference count alone, no collection involved
    try:
        del held
        assert gone() is None
    finally:
        gc.enable()


def test_what_an_untracked_object_refers_to_stays_alive_through_collections() -> None:
    inner = Holder(array("d", [3.0]))
    holder = Holder([inner])  # a tracked list held only by the untracked holder
    untrack(holder)
    alive = weakref.ref(inner)
    del inner
    gc.collect()
    assert alive() is not None  # the untracked holder's reference counts as held
    del holder
    assert alive() is None


def test_untracking_what_each_round_builds_keeps_memory_flat() -> None:
    """Rounds that each build, untrack and drop a thousand holders end where they began."""

    def round_() -> None:
        kept = [Holder(array("d", [float(i)] * 30)) for i in range(1000)]
        for h in kept:
            untrack(h, h.values)

    round_()
    tracemalloc.start()
    try:
        round_()
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            round_()
        assert tracemalloc.get_traced_memory()[0] - first < 50_000
    finally:
        tracemalloc.stop()
