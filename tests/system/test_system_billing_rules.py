"""The billing recording rules against a real Prometheus holding two days across a month's end.

A bytes counter is backfilled (``promtool tsdb create-blocks-from openmetrics``) for
2026-01-31 (10 bytes/s) and 2026-02-01 (2 bytes/s), and for a second account the true-time
series too (each minute's bytes at the minute's start, as remote_write stores them). The
recorded 5-minute bandwidth the month-to-date rule reads is backfilled from them as the first
billing group records it, every minute (its expression over the data, at each minute: a range
query, written back as OpenMetrics; ``create-blocks-from rules`` would evaluate at instants
offset from the minute). Each rule's expression is then queried at a chosen evaluation time,
as Prometheus evaluates the rule then. (promtool's rule unit tests cannot hold a 31-day
subquery at 5-minute steps: their engine loads at most 10,000 samples.)
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.deploy_helpers import RULES, load_yaml, tool
from tests.system.system_stack import (
    Processes,
    free_port,
    http,
    promql_quantile,
    start_prometheus,
    wait_for,
)

pytestmark = pytest.mark.system

FEB_1 = 1_769_904_000  # 2026-02-01T00:00:00Z
DAY = 86_400
STEP = 60  # one scrape a minute
JANUARY_RATE, FEBRUARY_RATE = 10.0, 2.0  # bytes per second
P95 = "account_side:cdnvideo_account_transferred_bytes:rate5m_p95_month_to_date"
RATE = "account_side:cdnvideo_account_transferred_bytes:rate5m"
TRUE_P95 = "account_side:cdnvideo_minute_account_transferred_bytes:rate5m_p95_month_to_date"
TRUE_ACCOUNT = "true-media"  # has the true-time series beside its counter (50 bytes/s)
TRUE_COUNTER_RATE = 50.0
# The rule before it was chained (issue 50): the 95th percentile of a subquery of the rate of
# the counters themselves, evaluated with the rest every 15 s or so.
UNCHAINED_P95 = """
quantile_over_time(0.95, (
  max by (account, side) (rate(cdnvideo_account_transferred_bytes_total[5m]))
  and on (account, side) (
    max by (account, side) (month(timestamp(cdnvideo_account_transferred_bytes_total)))
    == on (account, side)
    max by (account, side) (month(timestamp(cdnvideo_account_transferred_bytes_total @ end())))
  )
)[31d:1m])
"""


def minute_bytes(t: int) -> int:
    """The true-time figure of the minute starting at ``t``: 1,000 bytes/s all of January 31,
    a shape that differs from interval to interval on February 1."""
    if t < FEB_1:
        return 60_000
    i = (t - FEB_1) // 60
    return 60 * (7 * (i % 13) + 3 * (i % 29) + (i // 60) % 5)


def history() -> str:
    """OpenMetrics: the edge bytes counters of demo-media and true-media from Jan 31 to the end
    of Feb 1, as two replicas of one shard scrape them, and true-media's minute series."""
    lines = ["# TYPE cdnvideo_account_transferred_bytes counter"]
    for account, jan, feb in (
        ("demo-media", JANUARY_RATE, FEBRUARY_RATE),
        (TRUE_ACCOUNT, TRUE_COUNTER_RATE, TRUE_COUNTER_RATE),
    ):
        for instance in ("e1:9877", "e2:9877"):
            total = 0.0
            for t in range(FEB_1 - DAY, FEB_1 + DAY, STEP):
                total += (jan if t <= FEB_1 else feb) * STEP
                lines.append(
                    "cdnvideo_account_transferred_bytes_total"
                    f'{{account="{account}",side="edge",instance="{instance}"}} {total:.0f} {t}'
                )
    lines.append("# TYPE cdnvideo_minute_account_transferred_bytes gauge")
    for t in range(FEB_1 - DAY, FEB_1 + DAY, 60):
        lines.append(
            "cdnvideo_minute_account_transferred_bytes"
            f'{{account="{TRUE_ACCOUNT}",side="edge"}} {minute_bytes(t)} {t}'
        )
    return "\n".join([*lines, "# EOF", ""])


def five_minute_means(start: int, end: int) -> list[float]:
    """Mean bandwidth of each 5-minute interval of the clock in [start, end): its bytes / 300."""
    return [sum(minute_bytes(t + 60 * k) for k in range(5)) / 300 for t in range(start, end, 300)]


def expression(record: str) -> str:
    rules = [r for g in load_yaml(RULES)["groups"] for r in g["rules"] if "record" in r]
    return str(next(r["expr"] for r in rules if r["record"] == record))


def recorded_history(url: str) -> str:
    """OpenMetrics: the first billing group's 5-minute bandwidth at every minute of the data,
    as Prometheus evaluates it (a range query of the rule's expression)."""
    query = urllib.parse.urlencode(
        {"query": expression(RATE), "start": FEB_1 - DAY, "end": FEB_1 + DAY, "step": STEP}
    )
    status, body, _ = http("GET", f"{url}/api/v1/query_range?{query}", timeout=180.0)
    reply = json.loads(body)
    assert status == 200, reply
    lines = [f"# TYPE {RATE} gauge"]
    for series in reply["data"]["result"]:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(series["metric"].items()))
        lines += [f"{RATE}{{{labels}}} {v} {t}" for t, v in series["values"]]
    return "\n".join([*lines, "# EOF", ""])


def backfill(promtool: str, text: str, source: Path, data: Path) -> None:
    """Write ``text`` (OpenMetrics) into blocks of the Prometheus data folder ``data``."""
    source.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def prometheus_with_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The counters' history; then, with Prometheus serving it, the recorded 5-minute series
    over it, added while Prometheus is stopped (it reads new blocks at start)."""
    promtool, prometheus = tool("promtool", "prometheus"), tool("prometheus", "prometheus")
    tmp = tmp_path_factory.mktemp("billing")
    data = tmp / "prometheus-data"
    backfill(promtool, history(), tmp / "history.om", data)
    procs = Processes(tmp)
    port = free_port()
    config = {"global": {"evaluation_interval": "1h"}, "rule_files": [str(RULES)]}
    url = f"http://127.0.0.1:{port}"

    def serve() -> None:
        start_prometheus(procs, prometheus, tmp, config, port, data=data)
        wait_for("prometheus ready", lambda: http("GET", f"{url}/-/ready")[0] == 200, 60, procs)

    try:
        serve()
        recorded = recorded_history(url)
        procs.stop()
        backfill(promtool, recorded, tmp / "recorded.om", data)
        serve()
        yield url
    finally:
        procs.stop()


def at(url: str, expr: str, when: int) -> list[tuple[dict[str, str], float]]:
    query = urllib.parse.urlencode({"query": expr, "time": str(when)})
    # a month-long subquery takes seconds on a loaded machine
    status, body, _ = http("GET", f"{url}/api/v1/query?{query}", timeout=180.0)
    reply = json.loads(body)
    assert status == 200, reply
    return [(s["metric"], float(s["value"][1])) for s in reply["data"]["result"]]


def of(account: str, samples: list[tuple[dict[str, str], float]]) -> list[Any]:
    return [s for s in samples if s[0]["account"] == account]


def test_five_minute_bandwidth_is_one_series_per_account_and_side(
    prometheus_with_history: str,
) -> None:
    noon = FEB_1 + DAY // 2
    got = at(prometheus_with_history, expression(RATE), noon)
    assert sorted(got, key=lambda s: s[0]["account"]) == [
        ({"account": "demo-media", "side": "edge"}, pytest.approx(FEBRUARY_RATE)),
        ({"account": TRUE_ACCOUNT, "side": "edge"}, pytest.approx(TRUE_COUNTER_RATE)),
    ]


def test_the_95th_percentile_covers_the_month_of_the_evaluation_only(
    prometheus_with_history: str,
) -> None:
    url, p95 = prometheus_with_history, expression(P95)
    labels = {"account": "demo-media", "side": "edge"}
    # a day into February: January's last day (5 times as much) is left out
    assert of("demo-media", at(url, p95, FEB_1 + DAY - 60)) == [
        (labels, pytest.approx(FEBRUARY_RATE))
    ]
    # on January 31 the same rule reads January
    assert of("demo-media", at(url, p95, FEB_1 - 3600)) == [(labels, pytest.approx(JANUARY_RATE))]
    # a rolling 31 days would have taken January in: the month filter is what leaves it out
    rolling = f"quantile_over_time(0.95, ({expression(RATE)})[31d:1m])"
    assert of("demo-media", at(url, rolling, FEB_1 + DAY - 60)) == [
        (labels, pytest.approx(JANUARY_RATE))
    ]


def test_the_true_time_95th_percentile_takes_the_months_own_5_minute_intervals(
    prometheus_with_history: str,
) -> None:
    url, p95 = prometheus_with_history, expression(TRUE_P95)
    labels = {"account": TRUE_ACCOUNT, "side": "edge"}
    # a day into February: every complete interval of February 1 (the last one, 23:55-24:00,
    # ends after the evaluation); January 31's 23:55-24:00 is January's
    end = FEB_1 + DAY - 60
    want = promql_quantile(0.95, five_minute_means(FEB_1, FEB_1 + DAY - 300))
    assert at(url, p95, end) == [(labels, pytest.approx(want))]
    assert want != pytest.approx(promql_quantile(0.95, five_minute_means(FEB_1, FEB_1 + DAY - 600)))
    # on January 31 the same rule reads January's minutes only
    assert at(url, p95, FEB_1 - 3600) == [(labels, pytest.approx(1000.0))]
    # half an hour into February: February's 6 intervals, not the hour before
    want = promql_quantile(0.95, five_minute_means(FEB_1, FEB_1 + 1800))
    assert at(url, p95, FEB_1 + 1800) == [(labels, pytest.approx(want))]


def test_the_billing_dashboard_takes_the_true_time_figure_where_it_exists(
    prometheus_with_history: str,
) -> None:
    """The Billing dashboard's 95th percentile panel: the true-time figure for an account that
    has it, the counters' figure for one that has not. (The data holds edge figures only, so
    the panel's matchers on the recorded series are not needed here.)"""
    from tests.deploy.deploy_helpers import dashboards, panels

    (panel,) = [
        p
        for p in panels(dashboards()["billing.json"])
        if p.get("title") == "95th percentile bandwidth, month to date (edge)"
    ]
    (target,) = panel["targets"]
    query = target["expr"]
    for record in (TRUE_P95, P95):  # each recorded series as the rule computes it then
        query, n = re.subn(re.escape(record) + r"\{[^}]*\}", f"({expression(record)})", query)
        assert n == 1, record
    url, end = prometheus_with_history, FEB_1 + DAY - 60
    got = {s["account"]: v for s, v in at(url, query, end)}
    true_time = at(url, expression(TRUE_P95), end)[0][1]
    assert got == {
        "demo-media": pytest.approx(8 * FEBRUARY_RATE),
        TRUE_ACCOUNT: pytest.approx(8 * true_time),
    }
    assert true_time != pytest.approx(TRUE_COUNTER_RATE)


@pytest.mark.parametrize(
    "when",
    [FEB_1 - DAY // 2, FEB_1 - 3600, FEB_1 + 120, FEB_1 + 1800, FEB_1 + DAY - 60],
    ids=["jan-31-12:00", "jan-31-23:00", "feb-1-00:02", "feb-1-00:30", "feb-1-23:59"],
)
def test_the_chained_95th_percentile_gives_the_unchained_rules_figures(
    prometheus_with_history: str, when: int
) -> None:
    """The month-to-date figure from the recorded 5-minute series equals the one the rule
    gave before it was chained (a subquery of the counters' rate), for every account."""
    url = prometheus_with_history
    before = sorted(at(url, UNCHAINED_P95, when), key=lambda s: s[0]["account"])
    after = sorted(at(url, expression(P95), when), key=lambda s: s[0]["account"])
    assert [labels for labels, _ in after] == [labels for labels, _ in before]
    assert [labels["account"] for labels, _ in after] == ["demo-media", TRUE_ACCOUNT]
    assert [value for _, value in after] == pytest.approx([value for _, value in before], rel=1e-12)
