"""The dashboards count the exporter and nothing else: a real Prometheus scrapes the demo (the
exporter against its simulator) and itself, every variable is set to "All" as Grafana sets it
(a variable without a custom ``allValue`` becomes the regular expression of its values, each
escaped, ``(a|b)``; one with an ``allValue`` becomes that), and every panel query of
exporter-health.json must see one exporter: each series it returns belongs to the exporter's
target, and "Exporters up" says 1.
"""

from __future__ import annotations

import json
import re
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
    free_port,
    http,
    start_prometheus,
    wait_for,
)

pytestmark = pytest.mark.system

DEMO = [sys.executable, "-m", "exporter", "demo", "--simulator-listen", "127.0.0.1:0"]
_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*(?P<label>\w+)\)$")
_REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|\\]")


def query(prom: str, expr: str) -> list[dict[str, Any]]:
    _, body, _ = http("GET", f"{prom}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    reply: dict[str, Any] = json.loads(body)
    assert reply["status"] == "success", f"{expr}: {reply}"
    result: list[dict[str, Any]] = reply["data"]["result"]
    return result


def grafana_all(prom: str, board: dict[str, Any]) -> dict[str, str]:
    """Each variable at "All", worked out in the board's order as Grafana does (a variable's
    query sees the values of those before it)."""
    values: dict[str, str] = {}
    for var in board["templating"]["list"]:
        if var["type"] == "custom":
            values[var["name"]] = var.get("allValue") or "|".join(
                o["value"] for o in var.get("options", []) if o["value"] != "$__all"
            )
        if var["type"] != "query":
            continue
        if var.get("allValue"):
            values[var["name"]] = var["allValue"]
            continue
        m = _LABEL_VALUES.match(var["definition"])
        assert m, var["definition"]
        found = query(prom, f"count by ({m['label']}) ({concrete(m['selector'], values)})")
        # In the PromQL string literal, as Grafana writes it: two backslashes before each.
        escaped = sorted(_REGEX_SPECIAL.sub(r"\\\\\g<0>", s["metric"][m["label"]]) for s in found)
        values[var["name"]] = "(" + "|".join(escaped) + ")"
    return values


@pytest.fixture(scope="module")
def self_scraping_prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, str]]:
    """(Prometheus URL, the exporter's instance): Prometheus scrapes the demo and itself."""
    prometheus = tool("prometheus", "the Debian package prometheus")
    tmp = tmp_path_factory.mktemp("scope")
    procs = Processes(tmp)
    port, prom_port = free_port(), free_port()
    exporter = f"127.0.0.1:{port}"
    try:
        procs.start("demo", [*DEMO, "--listen", exporter])
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": JOB, "static_configs": [{"targets": [exporter]}]},
                {
                    "job_name": "prometheus",
                    "static_configs": [{"targets": [f"127.0.0.1:{prom_port}"]}],
                },
            ],
        }
        start_prometheus(procs, prometheus, tmp, config, prom_port)
        prom = f"http://127.0.0.1:{prom_port}"

        def both_scraped() -> bool:
            try:
                up = query(prom, "up == 1")
                built = query(prom, "cdnvideo_exporter_build_info")
            except (OSError, ValueError, AssertionError):  # not listening yet
                return False
            return len(up) == 2 and len(built) == 1

        wait_for("both targets scraped", both_scraped, 60.0, procs)
        time.sleep(3.0)  # a few samples more, for rate() over $__rate_interval
        yield prom, exporter
    finally:
        procs.stop()


def test_all_selects_the_exporter_only_though_prometheus_scrapes_itself(
    self_scraping_prometheus: tuple[str, str],
) -> None:
    prom, exporter = self_scraping_prometheus
    assert len(query(prom, "up")) == 2  # the premise: another job's target is there
    board = dashboards()["exporter-health.json"]
    values = grafana_all(prom, board)
    assert values["job"] == f"({JOB})"
    assert values["instance"] == "(" + exporter.replace(".", "\\\\.") + ")"
    checked = 0
    for panel in panels(board):
        for target in panel.get("targets", []):
            expr = concrete(target["expr"], values)
            for series in query(prom, expr):
                ref = f"{panel['title']} [{target['refId']}]: {series['metric']}"
                assert series["metric"].get("instance", exporter) == exporter, ref
                assert series["metric"].get("job", JOB) == JOB, ref
                checked += 1
    assert checked >= 20
    (up,) = next(p for p in panels(board) if p["title"] == "Exporters up")["targets"]
    (count,) = query(prom, concrete(up["expr"], values))
    assert count["value"][1] == "1"


def test_the_scrape_panels_show_one_exporters_scrapes(
    self_scraping_prometheus: tuple[str, str],
) -> None:
    prom, exporter = self_scraping_prometheus
    board = dashboards()["exporter-health.json"]
    values = grafana_all(prom, board)
    for title in ("Scrape duration", "Samples per scrape"):
        panel = next(p for p in panels(board) if p["title"] == title)
        replies = [query(prom, concrete(t["expr"], values)) for t in panel["targets"]]
        assert [[s["metric"]["instance"] for s in r] for r in replies] == [[exporter]], title
