"""Interpreter settings for the serving process: the event loop first, worker threads second.

The heavy steps of a refresh (parsing a thousand resources, building and compressing their
fragment) run in worker threads, but they share the GIL with the event loop. Two settings keep
``/metrics`` and ``/healthz`` answering while they run (docs/performance.md has the figures):

- a 1 ms switch interval (Python's default is 5 ms): the loop thread waits at most about that
  long for the GIL after each socket call, instead of up to 5 ms every time;
- ``gc.freeze()`` once everything is imported and built: the ~45,000 long-lived objects of the
  modules are left out of every later full collection, which shortens the pauses that stop
  every thread (at 1000 resources: 40 -> 10 ms).

Called by ``cdnvideo-exporter run`` and ``demo`` (and the benchmark), not by ``create_app``:
tests build many apps in one process, and freezing there would keep their garbage for good.
"""

from __future__ import annotations

import gc
import sys

SWITCH_INTERVAL_SECONDS = 0.001


def tune_for_serving() -> None:
    """Apply both settings; call after the app is built, before it serves."""
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    gc.collect()
    gc.freeze()
