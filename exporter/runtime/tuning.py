"""Interpreter settings for the serving process: the event loop first, worker threads second.

The heavy steps of a refresh (parsing a thousand resources, building and compressing their
fragment) run in worker threads, but they share the GIL with the event loop. Three settings keep
``/metrics`` and ``/healthz`` answering while they run (the figures:
docs/performance.md#interpreter-settings-for-serving, docs/performance.md#fewer-full-collections
and docs/performance.md#a-02-ms-switch-interval):

- a switch interval of ``SWITCH_INTERVAL_SECONDS``, far below Python's default: the loop
  thread waits about that long for the GIL after each socket call, and a task step making
  a few socket calls while a worker thread computes pays a few intervals; the price is more
  switches, and so more CPU, while threads compete;
- ``gc.freeze()`` once everything is imported and built: the long-lived objects of the modules
  are left out of every later full collection, which shortens the pauses that stop every
  thread;
- a young-generation threshold of ``GC_THRESHOLDS[0]`` allocations (Python's is 700): a refresh
  allocates millions of short-lived objects, and with 700 it ran many times as many
  collections, full ones among them, each full one visiting everything the refresh holds at
  that moment.

Full collections are deferred to quiet moments (``exporter.support.collector``): after each
render that followed a change, not in the middle of a refresh, and the survivors are frozen
once after start-up.

It also limits the C allocator's heaps and lets the renderer give freed pages back
(``exporter.support.malloc``): the memory side of the same work in worker threads.

Called by ``cdnvideo-exporter run`` and ``demo`` (and the benchmark), not by ``create_app``:
tests build many apps in one process, and freezing there would keep their garbage for good.
"""

from __future__ import annotations

import gc
import sys

from exporter.exposition.store import Exposition
from exporter.support import collector, malloc

SWITCH_INTERVAL_SECONDS = 0.0002
GC_THRESHOLDS = (5000, 10)  # young, middle; full ones: exporter.support.collector


def tune_for_serving() -> None:
    """Apply the settings; call after the app is built, before it serves."""
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    gc.collect()
    gc.freeze()
    collector.defer_full_collections(*GC_THRESHOLDS)
    malloc.tune_heaps()


def after_render(changed: bool, exposition: Exposition) -> None:
    """What a refresh left behind, given back (the store's ``after_render``): the C heaps' free
    pages after a change, and the full garbage collection owed at the first quiet render after
    one (the collector's pause is short when no poll holds its replies;
    ``exporter.support.collector``). The allocator keeps buffers the size of the body in its
    heaps (``malloc.fit``). Each step does nothing until ``tune_for_serving`` enabled it."""
    malloc.fit(max(len(exposition.gzipped), len(exposition.openmetrics_gzipped)))
    if changed:
        collector.changed()
        malloc.trim()
    elif collector.quiet():
        malloc.trim()
