"""The traffic transform: counters held at 0 until seen, unit conversions, codes apart from
classes, resources named and folded, and a clean exposition."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from exporter.exposition import EVERYTHING, Store, StoreKey
from exporter.support.clock import FakeClock
from exporter.traffic.families import ACCOUNT, RESOURCE, RESOURCE_INFO, View
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import ResourceRow, parse_row
from exporter.traffic.select import fold
from exporter.traffic.transform import Latest, build_fragment
from exporter.traffic.windows import Window

T = 1_767_225_600
FIGURES = {
    "edge_bandwidth": 8_000_000,  # bits/s
    "origin_bandwidth": 800,
    "edge_requests_total": 600,
    "edge_status_200": 540,
    "edge_status_2xx": 570,
    "edge_hit_bytes": 6_000,
    "edge_hit_ratio": 0.75,
    "edge_request_time": {"0_250k": 0.031, "4M+": 1.5},
}
CLASS_2XX, CLASS_5XX = {"class": "2xx"}, {"class": "5xx"}  # `class` is a Python keyword


def make() -> tuple[AccountLedger, Latest]:
    led = AccountLedger()
    totals = parse_row(FIGURES)
    www = ResourceRow("101", "www", "www.acme.example", parse_row(FIGURES))
    img = ResourceRow("102", "img", "img.acme.example", parse_row(FIGURES))
    w = Window(T, T + 120)
    led.count_first_read(w, totals, [www, img], frozenset({"101"}), T, (300, 5))
    latest = Latest(w, totals, (www,), fold([img]))
    build_fragment("acme", led, latest)  # every counter's first refresh shows 0
    return led, latest


def test_a_new_counter_is_published_at_0_once_and_then_with_its_value() -> None:
    led = AccountLedger()
    w = Window(T, T + 60)
    www = ResourceRow("101", "www", "www.acme.example", parse_row(FIGURES))
    led.count_first_read(w, parse_row(FIGURES), [www], None, T, (300, 5))
    first = build_fragment("acme", led, None)
    assert first.value(ACCOUNT.requests_total, side="edge") == 0
    assert first.value(RESOURCE.requests_total, resource="101", side="edge") == 0
    assert first.value(RESOURCE.responses_total, resource="101", code="200") == 0
    assert led.unshown  # the next refresh must show the values
    second = build_fragment("acme", led, None)
    assert second.value(ACCOUNT.requests_total, side="edge") == 600
    assert second.value(RESOURCE.requests_total, resource="101", side="edge") == 600
    assert not led.unshown
    # A key the resource sends for the first time later (its first 5xx) starts at 0 too.
    later = parse_row({**FIGURES, "edge_status_5xx": 4})
    led.count_first_read(
        Window(T + 60, T + 120), later, [ResourceRow("101", "www", "", later)], None, T, None
    )
    third = build_fragment("acme", led, None)
    assert third.value(RESOURCE.responses_by_class_total, resource="101", **CLASS_5XX) == 0
    assert third.value(RESOURCE.requests_total, resource="101", side="edge") == 1200
    fourth = build_fragment("acme", led, None)
    assert fourth.value(RESOURCE.responses_by_class_total, resource="101", **CLASS_5XX) == 4


def test_a_new_counter_first_counted_at_0_is_held_at_0_too() -> None:
    """A key whose first count is 0 (a code the platform sends at 0, a per-code series a
    restart newly exports before its first minute with that code) keeps 0 until a scrape
    was answered with it, like any new key: shown as seen at once, the count a later minute
    adds reached the first scrape when no scrape came between (seed 4070: counted while the
    state file could not be written, it was first scraped at 478)."""
    led = AccountLedger()
    first_row = parse_row({**FIGURES, "edge_status_503": 0})
    led.count_first_read(Window(T, T + 60), first_row, [], None, T, None)
    assert (
        build_fragment("acme", led, None, served=False).value(
            ACCOUNT.responses_total, side="edge", code="503"
        )
        == 0
    )
    later = parse_row({**FIGURES, "edge_status_503": 7})
    led.count_first_read(Window(T + 60, T + 120), later, [], None, T + 60, None)
    unseen = build_fragment("acme", led, None, served=False)  # no scrape read the 0 yet
    assert unseen.value(ACCOUNT.responses_total, side="edge", code="503") == 0
    assert led.unshown
    seen = build_fragment("acme", led, None, served=True)  # a scrape was answered with it
    assert seen.value(ACCOUNT.responses_total, side="edge", code="503") == 7
    assert seen.value(ACCOUNT.requests_total, side="edge") == 1200


def test_resource_counters_carry_the_id_only_and_the_info_series_the_names() -> None:
    led, latest = make()
    f = build_fragment("acme", led, latest)
    assert f.value(RESOURCE_INFO, resource="101", resource_name="www") == 1
    assert f.value(RESOURCE_INFO, resource="101", cname="www.acme.example") == 1
    assert f.value(RESOURCE_INFO, resource="__other__", resource_name="__other__", cname="") == 1
    # Renamed: the counter continues under the same labels, the info series follows.
    renamed = ResourceRow("101", "web", "web.acme.example", parse_row(FIGURES))
    w = Window(T + 120, T + 180)
    led.count_first_read(w, parse_row(FIGURES), [renamed], None, T + 180, None)
    g = build_fragment("acme", led, None)
    assert g.value(RESOURCE.requests_total, resource="101", side="edge") == 1200
    assert g.value(RESOURCE_INFO, resource="101", resource_name="web") == 1
    assert g.value(RESOURCE_INFO, resource="101", resource_name="www") is None


def test_gauges_convert_bits_to_bytes_and_counts_to_rates() -> None:
    led, latest = make()
    f = build_fragment("acme", led, latest)
    a = {"account": "acme"}
    assert f.value(ACCOUNT.bandwidth, side="edge", **a) == 1_000_000
    assert f.value(ACCOUNT.requests_per_second, side="edge", **a) == 5  # 600 over 120 s
    assert f.value(ACCOUNT.responses_by_class_per_second, side="edge", **CLASS_2XX, **a) == 4.75
    assert f.value(ACCOUNT.responses_per_second, side="edge", code="200", **a) == 4.5
    assert f.value(ACCOUNT.response_time_median, side="edge", size_range="4M+", **a) == 1.5
    assert f.value(ACCOUNT.edge_hit_ratio, **a) == 0.75
    assert f.value(ACCOUNT.edge_hit_bytes_per_second, **a) == 50
    assert f.value(ACCOUNT.window_end, **a) == T + 120
    assert f.value(ACCOUNT.requests_total, side="edge", **a) == 600
    assert f.value(ACCOUNT.responses_total, side="origin", code="200", **a) is None  # never sent


def test_codes_and_classes_are_apart_so_each_family_sums_to_the_responses() -> None:
    """The platform counts a response under its code and its class: a sum over ``code`` (or
    over ``class``) counts each response once, and no ``code`` value is a class."""
    figures = {"edge_requests_total": 100, "edge_status_200": 90, "edge_status_206": 5}
    figures |= {"edge_status_2xx": 95, "edge_status_502": 5, "edge_status_5xx": 5}
    led = AccountLedger()
    row = parse_row(figures)
    www = ResourceRow("101", "www", "www.acme.example", row)
    w = Window(T, T + 60)
    led.count_first_read(w, row, [www], None, T, None)
    build_fragment("acme", led, None)
    f = build_fragment("acme", led, Latest(w, row, (www,)))
    for fam, labels in ((ACCOUNT, {}), (RESOURCE, {"resource": "101"})):
        by_code = f.samples[fam.responses_total]
        by_class = f.samples[fam.responses_by_class_total]
        codes = {dict(zip(fam.responses_total.labels, k, strict=True))["code"] for k, _ in by_code}
        assert codes == {"200", "206", "502"}
        assert sum(v for _, v in by_code) == sum(v for _, v in by_class) == 100
        assert f.value(fam.responses_by_class_total, **labels, **CLASS_5XX) == 5
        per_second = f.samples[fam.responses_per_second]
        assert sum(v for _, v in per_second) == pytest.approx(100 / 60)


def test_resource_classes_leave_out_the_resource_codes_and_keep_their_classes() -> None:
    led, latest = make()
    view = View.of(EVERYTHING, "classes", True)
    f = build_fragment("acme", led, latest, view)
    f = build_fragment("acme", led, latest, view)
    assert f.value(RESOURCE.responses_total, resource="101") is None
    assert f.value(RESOURCE.responses_per_second, resource="101") is None
    assert f.value(RESOURCE.responses_by_class_total, resource="101", **CLASS_2XX) == 570
    assert f.value(RESOURCE.responses_by_class_per_second, resource="101", **CLASS_2XX) == 4.75
    assert f.value(ACCOUNT.responses_total, code="200", side="edge") == 540


def test_resources_named_and_folded() -> None:
    led, latest = make()
    f = build_fragment("acme", led, latest)
    www = f.value(RESOURCE.requests_total, resource="101", side="edge")
    other = f.value(RESOURCE.requests_total, resource="__other__", side="edge")
    assert (www, other) == (600, 600)
    assert f.value(RESOURCE.bandwidth, resource="__other__", resource_name="__other__") == 1e6
    assert f.value(RESOURCE.response_time_median, resource="__other__") is None
    assert f.value(RESOURCE.requests_total, resource="102") is None
    assert f.value(RESOURCE.bandwidth, resource="101", cname="www.acme.example") == 1e6


def test_without_a_window_only_counters_are_exposed() -> None:
    led, _ = make()
    f = build_fragment("acme", led, None)
    assert f.value(ACCOUNT.requests_total, side="edge") == 600
    assert f.value(ACCOUNT.window_end) is None


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_check_metrics_is_clean() -> None:
    led, latest = make()
    store = Store(FakeClock(T))
    store.publish(StoreKey("traffic", "acme"), build_fragment("acme", led, latest))
    body = store.render_sync().plain
    assert b"cdnvideo_resource_responses_total{" in body
    done = subprocess.run(
        ["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30
    )
    report = (done.stdout + done.stderr).decode()
    assert done.returncode == 0, report
    assert not report.strip()
