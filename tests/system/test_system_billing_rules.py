"""The billing recording rules against a real Prometheus holding two days across a month's end.

A bytes counter is backfilled (``promtool tsdb create-blocks-from openmetrics``) for
2026-01-31 (10 bytes/s) and 2026-02-01 (2 bytes/s); each rule's expression is then queried at
a chosen evaluation time, as Prometheus evaluates the rule then. (promtool's rule unit tests
cannot hold a 31-day subquery at 5-minute steps: their engine loads at most 10,000 samples.)
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator

import pytest
from deploy_helpers import RULES, load_yaml, tool
from system_stack import Processes, free_port, http, start_prometheus, wait_for

pytestmark = pytest.mark.system

FEB_1 = 1_769_904_000  # 2026-02-01T00:00:00Z
DAY = 86_400
STEP = 60  # one scrape a minute
JANUARY_RATE, FEBRUARY_RATE = 10.0, 2.0  # bytes per second
P95 = "account_side:cdnvideo_account_transferred_bytes:rate5m_p95_month_to_date"
RATE = "account_side:cdnvideo_account_transferred_bytes:rate5m"


def history() -> str:
    """OpenMetrics: the edge bytes counter of demo-media from Jan 31 to the end of Feb 1, as
    two replicas of one shard scrape it."""
    lines = ["# TYPE cdnvideo_account_transferred_bytes counter"]
    for instance in ("e1:9877", "e2:9877"):
        total = 0.0
        for t in range(FEB_1 - DAY, FEB_1 + DAY, STEP):
            total += (JANUARY_RATE if t <= FEB_1 else FEBRUARY_RATE) * STEP
            lines.append(
                "cdnvideo_account_transferred_bytes_total"
                f'{{account="demo-media",side="edge",instance="{instance}"}} {total:.0f} {t}'
            )
    return "\n".join([*lines, "# EOF", ""])


def expression(record: str) -> str:
    rules = [r for g in load_yaml(RULES)["groups"] for r in g["rules"] if "record" in r]
    return str(next(r["expr"] for r in rules if r["record"] == record))


@pytest.fixture(scope="module")
def prometheus_with_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    promtool, prometheus = tool("promtool", "prometheus"), tool("prometheus", "prometheus")
    tmp = tmp_path_factory.mktemp("billing")
    source = tmp / "history.om"
    source.write_text(history(), encoding="utf-8")
    data = tmp / "prometheus-data"
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    procs = Processes(tmp)
    port = free_port()
    config = {"global": {"evaluation_interval": "1h"}, "rule_files": [str(RULES)]}
    try:
        start_prometheus(procs, prometheus, tmp, config, port, data=data)
        url = f"http://127.0.0.1:{port}"
        wait_for("prometheus ready", lambda: http("GET", f"{url}/-/ready")[0] == 200, 60, procs)
        yield url
    finally:
        procs.stop()


def at(url: str, expr: str, when: int) -> list[tuple[dict[str, str], float]]:
    query = urllib.parse.urlencode({"query": expr, "time": str(when)})
    status, body, _ = http("GET", f"{url}/api/v1/query?{query}")
    reply = json.loads(body)
    assert status == 200, reply
    return [(s["metric"], float(s["value"][1])) for s in reply["data"]["result"]]


def test_five_minute_bandwidth_is_one_series_per_account_and_side(
    prometheus_with_history: str,
) -> None:
    noon = FEB_1 + DAY // 2
    got = at(prometheus_with_history, expression(RATE), noon)
    assert got == [({"account": "demo-media", "side": "edge"}, pytest.approx(FEBRUARY_RATE))]


def test_the_95th_percentile_covers_the_month_of_the_evaluation_only(
    prometheus_with_history: str,
) -> None:
    url, p95 = prometheus_with_history, expression(P95)
    labels = {"account": "demo-media", "side": "edge"}
    # a day into February: January's last day (5 times as much) is left out
    assert at(url, p95, FEB_1 + DAY - 60) == [(labels, pytest.approx(FEBRUARY_RATE))]
    # on January 31 the same rule reads January
    assert at(url, p95, FEB_1 - 3600) == [(labels, pytest.approx(JANUARY_RATE))]
    # a rolling 31 days would have taken January in: the month filter is what leaves it out
    rolling = f"quantile_over_time(0.95, ({expression(RATE)})[31d:1m])"
    assert at(url, rolling, FEB_1 + DAY - 60) == [(labels, pytest.approx(JANUARY_RATE))]
