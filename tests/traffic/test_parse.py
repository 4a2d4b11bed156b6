"""Reply rows to arrays: flat and nested request times, unknown keys, bad values."""

from __future__ import annotations

import math

import pytest

from exporter.traffic.parse import (
    COUNT_INDEX,
    COUNT_KEYS,
    GAUGE_INDEX,
    GAUGE_KEYS,
    READ_COUNT_KEYS,
    parse_resources,
    parse_row,
    parse_totals,
)
from exporter.traffic.reply import MetricsReply, MetricsRow, parse_metrics
from exporter.upstream.errors import UpstreamError, is_error_body


def g(row_gauges: object, key: str) -> float:
    return row_gauges[GAUGE_INDEX[key]]  # type: ignore[index,no-any-return]


def test_every_documented_metric_has_a_slot() -> None:
    assert len(READ_COUNT_KEYS) == 2 + 2 * 22 + 1
    assert (*READ_COUNT_KEYS, "edge_transferred_bytes", "origin_transferred_bytes") == COUNT_KEYS
    assert len(GAUGE_KEYS) == 2 + 1 + 2 * 8
    assert "edge_status_5xx" in COUNT_INDEX
    assert "origin_request_time_4M+" in GAUGE_INDEX


def test_flat_request_time_keys_are_parsed() -> None:
    row = parse_row({"edge_request_time_0_250k": 0.12, "origin_request_time_4M+": 2.5})
    assert g(row.gauges, "edge_request_time_0_250k") == 0.12
    assert g(row.gauges, "origin_request_time_4M+") == 2.5


def test_nested_request_time_object_is_parsed() -> None:
    row = parse_row({"edge_request_time": {"0_250k": 0.1, "750k_1m": 0.3, "4m+": 0.9}})
    assert g(row.gauges, "edge_request_time_0_250k") == 0.1
    assert g(row.gauges, "edge_request_time_750k_1m") == 0.3
    assert g(row.gauges, "edge_request_time_4M+") == 0.9  # range names compared case-insensitively
    assert math.isnan(g(row.gauges, "edge_request_time_1m_2m"))


def test_unknown_keys_and_ranges_are_ignored() -> None:
    row = parse_row(
        {
            "edge_requests_total": 10,
            "edge_status_418": 3,
            "brand_new_metric": "text is fine here",
            "edge_request_time": {"8M+": 1.0, "0_250k": 0.2},
            "edge_request_time_9m_10m": 4.0,
        }
    )
    assert row.counts[COUNT_INDEX["edge_requests_total"]] == 10
    assert g(row.gauges, "edge_request_time_0_250k") == 0.2
    assert sum(1 for v in row.counts if v == v) == 1


def test_absent_and_null_keys_are_nan_not_zero() -> None:
    row = parse_row({"edge_requests_total": None})
    assert all(math.isnan(v) for v in row.counts)
    assert all(math.isnan(v) for v in row.gauges)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("edge_requests_total", "twelve"),
        ("edge_requests_total", "NaN"),
        ("edge_requests_total", float("nan")),
        ("edge_status_200", True),
        ("edge_status_200", {"n": 1}),
        ("edge_hit_bytes", -5),
        ("edge_hit_bytes", "-5"),
        ("origin_requests_total", 2.0**60),
    ],
)
def test_an_unreadable_count_fails_the_window(key: str, value: object) -> None:
    with pytest.raises(UpstreamError, match=key) as info:
        parse_row({key: value}, "data[3]")
    assert info.value.kind == "invalid_body"
    assert "data[3]" in info.value.message


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("edge_bandwidth", [1], "edge_bandwidth"),
        ("edge_bandwidth", float("nan"), "edge_bandwidth"),
        ("edge_hit_ratio", float("inf"), "edge_hit_ratio"),
        ("edge_hit_ratio", "n/a", "edge_hit_ratio"),
        ("origin_request_time_0_250k", True, "origin_request_time_0_250k"),
        ("edge_request_time", "fast", "edge_request_time"),
        ("edge_request_time", {"0_250k": "slow"}, "edge_request_time_0_250k"),
        ("edge_request_time", {"1M_2M": [0.1]}, "edge_request_time_1m_2m"),
    ],
)
def test_an_unreadable_gauge_value_is_dropped_alone(key: str, value: object, field: str) -> None:
    rejected: list[str] = []
    row = parse_row({key: value, "edge_requests_total": 7, "origin_bandwidth": 800}, "x", rejected)
    assert rejected == [field]
    assert row.counts[COUNT_INDEX["edge_requests_total"]] == 7
    assert g(row.gauges, "origin_bandwidth") == 800
    assert sum(1 for v in row.gauges if v == v) == 1


def test_numeric_strings_are_numbers_and_nested_ranges_may_be_upper_case() -> None:
    rejected: list[str] = []
    row = parse_row(
        {
            "edge_requests_total": "12",
            "edge_bandwidth": " 1600.5 ",
            "edge_hit_ratio": "0.9",
            "edge_request_time": {"1M_2M": "0.09091", "4M+": "1.5", "0_250K": "0.02"},
            "origin_status_200": "",
        },
        "data[0]",
        rejected,
    )
    assert rejected == []
    assert row.counts[COUNT_INDEX["edge_requests_total"]] == 12
    assert math.isnan(row.counts[COUNT_INDEX["origin_status_200"]])
    assert g(row.gauges, "edge_bandwidth") == 1600.5
    assert g(row.gauges, "edge_hit_ratio") == 0.9
    assert g(row.gauges, "edge_request_time_1m_2m") == 0.09091
    assert g(row.gauges, "edge_request_time_4M+") == 1.5
    assert g(row.gauges, "edge_request_time_0_250k") == 0.02


def test_totals_and_resources_replies() -> None:
    totals = parse_totals(MetricsReply("", "", "acme", (MetricsRow({"edge_hit_bytes": 5}),)))
    assert totals.counts[COUNT_INDEX["edge_hit_bytes"]] == 5
    reply = MetricsReply(
        "",
        "",
        "acme",
        (
            MetricsRow({"edge_requests_total": 1}, "7", "www", "www.example"),
            MetricsRow({"edge_requests_total": 2, "edge_bandwidth": 8}, "7", "www", "www.example"),
            MetricsRow({"edge_requests_total": 4}, "8", "img", "img.example"),
        ),
    )
    rows = parse_resources(reply)
    assert sorted(rows) == ["7", "8"]
    assert rows["7"].row.counts[COUNT_INDEX["edge_requests_total"]] == 3  # duplicates merged
    assert (rows["7"].name, rows["7"].cname) == ("www", "www.example")
    assert g(rows["7"].row.gauges, "edge_bandwidth") == 8


def test_an_empty_totals_reply_fails_the_window() -> None:
    with pytest.raises(UpstreamError, match="empty data list") as info:
        parse_totals(MetricsReply("", "", "acme", ()))
    assert info.value.kind == "invalid_body"
    assert parse_resources(MetricsReply("", "", "acme", ())) == {}  # no resources is an answer


@pytest.mark.parametrize("status", [200, "200", "ok", "success", "OK"])
def test_a_status_key_in_a_success_body_is_not_an_error(status: object) -> None:
    body = {"status": status, "start": "2026-01-01T00:00:00", "data": [{"edge_hit_bytes": 3}]}
    assert not is_error_body(body)
    totals = parse_totals(parse_metrics(body, per_resource=False))
    assert totals.counts[COUNT_INDEX["edge_hit_bytes"]] == 3


@pytest.mark.parametrize("body", [{"status": 200}, {"status": 200, "data": None}, {"data": {}}])
def test_a_success_body_without_a_data_list_fails_the_window(body: dict[str, object]) -> None:
    with pytest.raises(UpstreamError, match="data") as info:
        parse_metrics(body, per_resource=True)
    assert info.value.kind == "invalid_body"


def test_bytes_delivered_are_bandwidth_times_the_windows_seconds_over_8() -> None:
    row = parse_row({"edge_bandwidth": 8_000_000.004, "origin_bandwidth": "800"}, seconds=600)
    assert row.counts[COUNT_INDEX["edge_transferred_bytes"]] == 600_000_000  # to the byte
    assert row.counts[COUNT_INDEX["origin_transferred_bytes"]] == 60_000
    assert row.gauges[GAUGE_INDEX["edge_bandwidth"]] == 8_000_000.004  # the gauge as sent


@pytest.mark.parametrize(
    ("values", "seconds"),
    [
        ({"edge_bandwidth": 800}, None),  # the window's length unknown
        ({"edge_bandwidth": -8}, 60),  # no negative delivery
        ({"edge_bandwidth": "n/a"}, 60),  # unreadable: dropped with the gauge
        ({"edge_bandwidth": 2.0**60}, 60),  # beyond what a counter can hold
        ({"edge_transferred_bytes": 5, "edge_requests_total": 1}, 60),  # never a reply key
    ],
)
def test_bytes_delivered_are_absent_without_a_usable_bandwidth(
    values: dict[str, object], seconds: int | None
) -> None:
    row = parse_row(values, seconds=seconds)
    assert math.isnan(row.counts[COUNT_INDEX["edge_transferred_bytes"]])


def test_replies_derive_bytes_over_the_window_they_say_they_cover() -> None:
    rows = (MetricsRow({"edge_bandwidth": 80}, "7", "www", "www.example"),)
    five = MetricsReply("2026-01-01T17:00:00", "2026-01-01T17:05:00", "acme", rows)
    assert parse_totals(five).counts[COUNT_INDEX["edge_transferred_bytes"]] == 3000
    per = parse_resources(five)["7"].row.counts
    assert per[COUNT_INDEX["edge_transferred_bytes"]] == 3000
    unsaid = MetricsReply("", "2026-01-01T17:05:00", "acme", rows)
    assert math.isnan(parse_totals(unsaid).counts[COUNT_INDEX["edge_transferred_bytes"]])
