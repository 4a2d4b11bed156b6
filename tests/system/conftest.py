"""The running stack (simulator, exporter, Prometheus with the shipped rules), once per session.

Needs ``prometheus`` and ``promtool`` (Debian package ``prometheus``): skipped with a reason when
missing, a failure under ``CDNVIDEO_REQUIRE_TOOLS=1`` (CI).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The deployment tests' helpers read the dashboards, rules and metric families: one source.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "deploy"))

from tests.deploy.deploy_helpers import tool
from tests.system.system_stack import Processes, Stack, start_stack


@pytest.fixture(scope="session")
def promtool() -> str:
    return tool("promtool", "the Debian package prometheus")


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    prometheus = tool("prometheus", "the Debian package prometheus")
    tmp = tmp_path_factory.mktemp("system")
    procs = Processes(tmp)
    started = time.monotonic()
    try:
        running = start_stack(tmp, prometheus, procs)
        print(f"\nsystem stack ready in {time.monotonic() - started:.1f} s (logs in {tmp})")
        yield running
    finally:
        procs.stop()
