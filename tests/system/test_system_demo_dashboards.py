"""Every dashboard panel has data in a healthy demo, or says when it fills.

``cdnvideo-exporter demo`` (the exporter against its built-in simulator, as a new user first
runs it) is scraped by a real Prometheus every second. Each panel of every shipped dashboard,
with every variable at "All", must return data within ``DATA_SECONDS``, unless the panel
explains its emptiness: its ``fieldConfig.defaults.noValue`` (what Grafana shows instead of
"No data") says when it fills. A panel that is just empty fails, naming its dashboard and
title.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from tests.deploy.deploy_helpers import concrete, dashboards, panels, tool
from tests.system.system_stack import (
    JOB,
    Processes,
    all_selected,
    free_port,
    has_data,
    http,
    start_prometheus,
    summary,
    wait_for,
)

pytestmark = pytest.mark.system

STARTUP_SECONDS = 60.0  # generous: a loaded 2-core CI machine; the demo is ready in ~5 s
DEMO = [sys.executable, "-m", "exporter", "demo", "--simulator-listen", "127.0.0.1:0"]
DATA_SECONDS = 45.0  # rate() over $__rate_interval needs a few 1 s scrapes after the first poll


def explanation(panel: dict[str, Any]) -> str:
    """What the panel shows instead of "No data" (empty: it does not explain)."""
    return str(panel.get("fieldConfig", {}).get("defaults", {}).get("noValue", "")).strip()


@pytest.fixture(scope="module")
def demo_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Prometheus scraping a running demo (both stopped afterwards)."""
    prometheus = tool("prometheus", "the Debian package prometheus")
    tmp = tmp_path_factory.mktemp("demo")
    procs = Processes(tmp)
    port, prom_port = free_port(), free_port()
    try:
        procs.start("demo", [*DEMO, "--listen", f"127.0.0.1:{port}"])
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
            ],
        }
        start_prometheus(procs, prometheus, tmp, config, prom_port)
        wait_for(
            "demo ready",
            lambda: http("GET", f"http://127.0.0.1:{port}/readyz")[0] == 200,
            STARTUP_SECONDS,
            procs,
        )
        yield f"http://127.0.0.1:{prom_port}"
    finally:
        procs.stop()


def query(prom: str, expr: str) -> dict[str, Any]:
    _, body, _ = http("GET", f"{prom}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    reply: dict[str, Any] = json.loads(body)
    return reply


def test_every_panel_has_data_in_the_demo_or_says_when_it_fills(demo_prometheus: str) -> None:
    boards = dashboards()
    pending: dict[str, list[str]] = {}
    explained: dict[str, str] = {}
    for name, board in boards.items():
        values = all_selected(board)
        for panel in panels(board):
            exprs = [concrete(t["expr"], values) for t in panel.get("targets", []) if t.get("expr")]
            if not exprs:
                continue
            ref = f"{name}: {panel['title']}"
            pending[ref] = exprs
            if explanation(panel):
                explained[ref] = explanation(panel)
    assert len(pending) >= 40
    last: dict[str, str] = {}
    deadline = time.monotonic() + DATA_SECONDS
    while set(pending) - set(explained) and time.monotonic() < deadline:
        for ref, exprs in list(pending.items()):
            replies = [query(demo_prometheus, e) for e in exprs]
            if any(has_data(r) for r in replies):
                del pending[ref]
            else:
                last[ref] = "; ".join(summary(r) for r in replies)
        time.sleep(1.0)
    empty = {ref: last.get(ref, "") for ref in pending if ref not in explained}
    assert not empty, "panels empty in the demo without a word why:\n" + "\n".join(
        f"  {ref}: {why}" for ref, why in sorted(empty.items())
    )
