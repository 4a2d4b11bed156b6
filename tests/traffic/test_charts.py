"""The landing page's traffic charts without a browser: the hour-long ring of windows, the
SVG drawn from it, the top resources, and the sentence an account without data gets."""

from __future__ import annotations

import re

import aiohttp

from exporter.areakit.summary import Published
from exporter.exposition import EVERYTHING, Fragment, FragmentBuilder, StoreKey
from exporter.traffic.charts import account_charts, top_resources
from exporter.traffic.families import ACCOUNT, RESOURCE
from exporter.traffic.history import MAX_POINTS, Point, TrafficHistory
from exporter.traffic.summary import TopResource, traffic_summary
from exporter.web.landing import HEADERS, render_landing
from tests.web.admin.conftest import make_context, make_service

T0 = 1_767_225_600.0
ACC = ("account",)
SIDE = ("account", "side")
RES = ("account", "resource", "resource_name", "cname", "side")
END, RPS, BW, HIT = (
    ACCOUNT.window_end,
    ACCOUNT.requests_per_second,
    ACCOUNT.bandwidth,
    (ACCOUNT.edge_hit_ratio),
)
RES_BW, RES_RPS, RES_HIT = RESOURCE.bandwidth, RESOURCE.requests_per_second, RESOURCE.edge_hit_ratio


def window(end: float, rps: float = 100.0, account: str = "acme") -> Fragment:
    b = FragmentBuilder()
    b.add(END, (account,), end)
    b.add(RPS, (account, "edge"), rps)
    b.add(RPS, (account, "origin"), 1.0)
    b.add(BW, (account, "edge"), rps * 1000)
    b.add(HIT, (account,), 0.9)
    return b.build()


def test_the_ring_keeps_the_last_hour_of_windows() -> None:
    history = TrafficHistory()
    for minute in range(1, 91):
        history.record(StoreKey("traffic", "acme"), window(T0 + 60 * minute, rps=minute))
    points = history.points("acme")
    assert len(points) == 60
    assert (points[0].end, points[-1].end) == (T0 + 60 * 31, T0 + 60 * 90)
    assert points[-1] == Point(T0 + 5400, 90.0, 90_000.0, 0.9)  # edge side, not origin


def test_a_republished_window_replaces_its_point_and_an_older_one_is_ignored() -> None:
    history = TrafficHistory()
    history.record(StoreKey("traffic", "acme"), window(T0 + 120, rps=5))
    history.record(StoreKey("traffic", "acme"), window(T0 + 120, rps=7))  # re-read raised it
    history.record(StoreKey("traffic", "acme"), window(T0 + 60, rps=1))
    history.record(StoreKey("restream", "acme"), window(T0 + 180))  # not traffic
    assert [(p.end, p.requests_per_second) for p in history.points("acme")] == [(T0 + 120, 7.0)]
    history.forget("acme")
    assert history.points("acme") == ()


def test_the_ring_is_bounded_whatever_the_window_rate() -> None:
    history = TrafficHistory()
    for second in range(1000):  # windows a second apart (never real, still bounded)
        history.record(StoreKey("traffic", "acme"), window(T0 + second))
    assert len(history.points("acme")) == MAX_POINTS


def test_a_gap_breaks_the_line_and_a_lone_window_is_a_dot() -> None:
    ends = [*range(0, 600, 60), *range(1500, 1800, 60), 2400]
    html = account_charts(
        tuple(Point(T0 + s, 10.0 + s / 100, 5e6, 0.5) for s in ends), traffic_enabled=True
    )
    requests = html.split('data-chart="requests"', 1)[1].split("</figure>", 1)[0]
    assert requests.count("<polyline") == 2
    assert requests.count("<circle") == 1
    assert 'data-points="16"' in requests
    assert "<b>34/s</b>" in requests  # the latest value, in the caption
    assert "<b>5 MB/s</b>" in html
    assert "<b>50.0 %</b>" in html


def test_an_account_without_data_says_so_instead_of_drawing() -> None:
    assert "No traffic data yet" in account_charts((), traffic_enabled=True)
    assert "<svg" not in account_charts((), traffic_enabled=True)
    assert "traffic.enabled is false" in account_charts((), traffic_enabled=False)


def test_top_resources_by_edge_bandwidth_ten_at_most_escaped() -> None:
    b = FragmentBuilder()
    for i in range(12):
        labels = ("acme", str(i), f"site-{i}", f"c{i}.example")
        b.add(RES_BW, (*labels, "edge"), 1000.0 * i)
        b.add(RES_BW, (*labels, "origin"), 1e12)  # origin traffic does not rank
        b.add(RES_RPS, (*labels, "edge"), float(i))
        b.add(RES_HIT, labels, 0.5)
    b.add(RES_BW, ("acme", "__other__", "__other__", "", "edge"), 1e15)
    b.add(RES_BW, ("acme", "99", "<b>x</b>", "", "edge"), 500.0)
    table = top_resources(top_of(b.build()), lambda s: s)
    order = re.findall(r'data-resource="([^"]+)"', table)
    assert order == ["11", "10", "9", "8", "7", "6", "5", "4", "3", "2"]
    assert 'rect width="100.0"' in table  # the largest bar is full width
    assert "11 kB/s" in table
    assert "&lt;b&gt;x&lt;/b&gt;" not in table  # ranked 12th: not shown
    escaped = FragmentBuilder()
    escaped.add(RES_BW, ("acme", "1", "<b>x</b>", "", "edge"), 5.0)
    assert "&lt;b&gt;x&lt;/b&gt;" in top_resources(top_of(escaped.build()), lambda s: s)
    assert "No per-resource figures yet." in top_resources((), lambda s: s)


def top_of(fragment: Fragment) -> tuple[TopResource, ...]:
    """The traffic area's summary of ``fragment``: its top resources."""
    return traffic_summary(Published(fragment, False), "acme", EVERYTHING).top


async def test_the_landing_page_draws_what_the_store_published() -> None:
    async with aiohttp.ClientSession() as session:
        ctx = make_context("http://127.0.0.1:9", session)
        areas = make_service(ctx).areas
        for minute in range(1, 11):
            ctx.store.publish(
                StoreKey("traffic", ctx.accounts[0]),
                window(T0 + 60 * minute, account=ctx.accounts[0]),
            )
        page = render_landing(ctx, areas)
    first, second = (
        page.split(f'data-account="{a}"', 1)[1].split("</section>", 1)[0] for a in ctx.accounts[:2]
    )
    assert first.count('<svg class="chart"') == 3
    assert 'data-points="10"' in first
    assert "No traffic data yet" in second
    assert "<script" not in page
    assert HEADERS["Content-Security-Policy"] == (
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
