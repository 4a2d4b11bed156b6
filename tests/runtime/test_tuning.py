"""tune_for_serving: the settings the serving process runs with (checked in a child process,
so this test process keeps its own)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHILD = """
import gc, json, sys
from exporter.runtime.tuning import GC_THRESHOLDS, SWITCH_INTERVAL_SECONDS, tune_for_serving
from exporter.support.collector import FULL_AFTER
before = (sys.getswitchinterval(), gc.get_freeze_count(), gc.get_threshold())
tune_for_serving()
print(json.dumps({"before": before,
                  "after": (sys.getswitchinterval(), gc.get_freeze_count(), gc.get_threshold()),
                  "wanted": SWITCH_INTERVAL_SECONDS, "thresholds": [*GC_THRESHOLDS, FULL_AFTER]}))
"""


def test_tune_for_serving_shortens_the_switch_interval_and_freezes_the_heap() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=True
    )
    figures = json.loads(out.stdout)
    assert figures["before"] == [0.005, 0, [700, 10, 10]]  # Python's defaults
    assert figures["wanted"] == 0.0002
    assert figures["after"][0] == pytest.approx(0.0002, rel=1e-6)  # kept in microseconds
    assert figures["after"][1] > 1000  # the imported modules' objects are frozen
    # young collections every 5,000 allocations; full ones deferred to quiet moments
    assert figures["after"][2] == figures["thresholds"] == [5000, 10, 10_000]


TRIM_CHILD = """
import json, sys
from exporter.support import malloc

def rss_kb():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1])

tune = sys.argv[1] == "tuned"
if tune:
    assert malloc.tune_heaps()
blocks = [bytes(4000) for _ in range(40_000)]  # ~160 MB from the C allocator
kept = blocks[::200]  # a few survivors pin the heap: its top never becomes free
del blocks
before = rss_kb()
malloc.trim()
print(json.dumps({"before": before, "after": rss_kb()}))
"""


def _child(code: str, mode: str) -> dict[str, int]:
    """The JSON a child process running ``code`` prints, ``mode`` its argument."""
    out = subprocess.run(
        [sys.executable, "-c", code, mode], capture_output=True, text=True, timeout=60, check=True
    )
    return dict(json.loads(out.stdout))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc_trim")
def test_tuned_process_gives_freed_heap_pages_back() -> None:
    untuned, tuned = _child(TRIM_CHILD, "untuned"), _child(TRIM_CHILD, "tuned")
    # freed buffers stay in the heap (the top is pinned) until trim returns them
    assert untuned["before"] - untuned["after"] < 10_000  # trim does nothing untuned
    assert tuned["before"] - tuned["after"] > 100_000  # kB: most of the 160 MB goes back


# A child's prelude: the allocator module and its own RSS; the end: blocks freed, RSS returned.
RSS_CHILD = """
import json, sys
from exporter.support import malloc

def rss_kb():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1])
"""
FREED_END = """
pin = bytearray(1 << 20)  # allocated after them: the heap's top stays in use
start = rss_kb()
del blocks
print(json.dumps({"returned": start - rss_kb()}))
"""

LARGE_CHILD = (
    RSS_CHILD
    + """
if sys.argv[1] == "tuned":
    assert malloc.tune_heaps()
del bytearray(16 << 20)[:]  # a large block freed: glibc raises its threshold to 16 MB
blocks = [bytearray(5 << 20) for _ in range(20)]  # 100 MB of 5 MB buffers (reply-sized)
"""
    + FREED_END
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_large_buffers_go_back_when_freed_without_a_trim() -> None:
    assert _child(LARGE_CHILD, "untuned")["returned"] < 20_000  # kB: kept in the heap
    assert _child(LARGE_CHILD, "tuned")["returned"] > 90_000  # own pages, unmapped when freed


COLLECTOR_CHILD = """
import gc, json
from exporter.support import collector as c

full = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2
                    and full.append(1))
out = {"untuned_changed": c.changed(0.0), "untuned_quiet": c.quiet(0.0)}
c.defer_full_collections(700, 10)
# a start-up whose sums below cross 1024 (where floats round), as any uptime may
t0 = c._state.started = 900.004
out["threshold"] = gc.get_threshold()
out["quiet_before_any_change"] = c.quiet(t0 + 1)
out["first_change"] = c.changed(t0 + 1)
out["change_not_overdue"] = c.changed(t0 + 1 + c.OVERDUE_SECONDS - 1)
out["full_before_quiet"] = len(full)
out["quiet_after_changes"] = c.quiet(t0 + 70)
out["full_after_quiet"] = len(full)
out["frozen_early"] = c.frozen() or gc.get_freeze_count() > 0
c.changed(t0 + 71)
out["overdue_change"] = c.changed(t0 + 72 + c.OVERDUE_SECONDS)
out["frozen_after_start_up"] = c.frozen() and gc.get_freeze_count() > 1000
count = gc.get_freeze_count()
c.changed(t0 + 300)
out["quiet_later"] = c.quiet(t0 + 301)
out["frozen_again"] = gc.get_freeze_count() != count
out["full"] = len(full)
print(json.dumps(out))
"""


def test_full_collections_wait_for_a_quiet_render_and_survivors_are_frozen_once() -> None:
    """Tuned, Python starts no full collection by itself in the middle of a refresh: the
    first render with nothing changed after a change runs it (or a change once one is
    overdue), and the first one after start-up freezes what survives, once."""
    out = subprocess.run(
        [sys.executable, "-c", COLLECTOR_CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(out.stdout)
    assert got["untuned_changed"] is False  # untuned (tests): nothing happens
    assert got["untuned_quiet"] is False
    assert got["threshold"] == [700, 10, 10_000]
    assert got["quiet_before_any_change"] is False  # nothing owed
    assert got["first_change"] is False
    assert got["change_not_overdue"] is False
    assert got["full_before_quiet"] == 0
    assert got["quiet_after_changes"] is True
    assert got["full_after_quiet"] == 1
    assert got["frozen_early"] is False  # 70 s after start-up: not yet
    assert got["overdue_change"] is True  # changes for a minute without a quiet render
    assert got["frozen_after_start_up"] is True
    assert got["quiet_later"] is True
    assert got["frozen_again"] is False  # frozen once only
    assert got["full"] == 3


HEAP_CHILD = """
import gc, json
from exporter.support import collector as c

full = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2
                    and full.append(1))
c.defer_full_collections(700, 10)
t0 = c._state.started = 900.004
c.changed(t0)
held = [[i] for i in range(2 * c.SMALL_HEAP)]  # a poll's replies: many tracked objects
out = {"overdue_while_large": c.changed(t0 + c.OVERDUE_SECONDS + 1)}
out["quiet_while_large"] = c.quiet(t0 + c.OVERDUE_SECONDS + 2)
out["full_while_large"] = len(full)
del held
out["quiet_once_freed"] = c.quiet(t0 + c.OVERDUE_SECONDS + 3)
c.changed(t0 + 1000)
held = [[i] for i in range(2 * c.SMALL_HEAP)]
out["quiet_large_not_late"] = c.quiet(t0 + 1000 + c.LATE_SECONDS - 1)
out["quiet_large_late"] = c.quiet(t0 + 1000 + c.LATE_SECONDS)
out["full"] = len(full)
print(json.dumps(out))
"""


def test_a_full_collection_owed_waits_while_a_poll_holds_a_large_heap() -> None:
    """The collection owed runs at the first render with a small heap (a poll's replies
    freed), not at one where the pause would meet every object a poll holds; once late, it
    runs whatever the heap holds."""
    got = json.loads(
        subprocess.run(
            [sys.executable, "-c", HEAP_CHILD],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    assert got["overdue_while_large"] is False
    assert got["quiet_while_large"] is False
    assert got["full_while_large"] == 0
    assert got["quiet_once_freed"] is True
    assert got["quiet_large_not_late"] is False
    assert got["quiet_large_late"] is True
    assert got["full"] == 2


FIT_CHILD = (
    RSS_CHILD
    + """
assert malloc.fit(18 << 20) == malloc.MMAP_THRESHOLD  # untuned: nothing changes
assert malloc.tune_heaps()
if sys.argv[1] == "fitted":
    assert malloc.fit(18 << 20) == (18 << 20) + (18 << 20) // 4  # a quarter above the body
    assert malloc.fit(100 << 20) == malloc.MMAP_THRESHOLD_MAX
    assert malloc.fit(1 << 20) == malloc.MMAP_THRESHOLD
    malloc.fit(18 << 20)
blocks = [bytearray(15 << 20) for _ in range(6)]  # 90 MB: the unsent rest of a large body
"""
    + FREED_END
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_buffers_the_size_of_the_body_stay_in_the_heaps_once_fitted() -> None:
    """At 25,000 resources the 17.8 MB body's unsent rest, copied on each scrape, got pages of
    its own every time (20 ms of system CPU a scrape); fitted, it is carved from the heaps."""
    assert _child(FIT_CHILD, "unfitted")["returned"] > 80_000  # kB: own pages, unmapped
    assert _child(FIT_CHILD, "fitted")["returned"] < 20_000  # kept in the heap for the next
