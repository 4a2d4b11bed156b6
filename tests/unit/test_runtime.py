"""tune_for_serving: the settings the serving process runs with (checked in a child process,
so this test process keeps its own)."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import gc, json, sys
from exporter.runtime.tuning import GC_THRESHOLDS, SWITCH_INTERVAL_SECONDS, tune_for_serving
before = (sys.getswitchinterval(), gc.get_freeze_count(), gc.get_threshold())
tune_for_serving()
print(json.dumps({"before": before,
                  "after": (sys.getswitchinterval(), gc.get_freeze_count(), gc.get_threshold()),
                  "wanted": SWITCH_INTERVAL_SECONDS, "thresholds": GC_THRESHOLDS}))
"""


def test_tune_for_serving_shortens_the_switch_interval_and_freezes_the_heap() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=True
    )
    figures = json.loads(out.stdout)
    assert figures["before"] == [0.005, 0, [700, 10, 10]]  # Python's defaults
    assert figures["after"][0] == figures["wanted"] == 0.001
    assert figures["after"][1] > 1000  # the imported modules' objects are frozen
    # young collections every 5,000 allocations: fewer full collections during a refresh
    assert figures["after"][2] == figures["thresholds"] == [5000, 10, 10]
