"""Cardinality controls: include/exclude, top N by edge traffic, the __other__ fold."""

from __future__ import annotations

import math

from exporter.traffic.parse import COUNT_INDEX, GAUGE_INDEX, ResourceRow, parse_row
from exporter.traffic.select import ResourceSelector, fold


def res(rid: str, name: str, bandwidth: float, requests: int = 10, **extra: float) -> ResourceRow:
    values = {"edge_bandwidth": bandwidth, "edge_requests_total": requests, **extra}
    return ResourceRow(rid, name, f"{name}.example", parse_row(values))


def test_include_and_exclude_match_id_or_name() -> None:
    s = ResourceSelector("^(www|img)$|^9", "img", 0)
    assert s.allowed("1", "www")
    assert s.allowed("90", "anything")  # include matched the id
    assert not s.allowed("2", "img")  # excluded by name
    assert not s.allowed("3", "vod")  # not included
    assert ResourceSelector(".*", "", 0).allowed("x", "")


def test_no_cap_names_every_resource() -> None:
    sel = ResourceSelector(".*", "", 0).select([res("a", "a", 1), res("b", "b", 2)])
    assert [r.id for r in sel.named] == ["b", "a"]
    assert sel.folded == ()
    assert sel.named_ids is None


def test_top_n_by_edge_traffic_rest_folded() -> None:
    rows = [res("a", "a", 10), res("b", "b", 30), res("c", "c", 20), res("d", "d", 20, 50)]
    sel = ResourceSelector(".*", "", 2).select(rows)
    assert [r.id for r in sel.named] == ["b", "d"]  # a tie on bandwidth goes to requests
    assert [r.id for r in sel.folded] == ["c", "a"]
    assert sel.named_ids == frozenset({"b", "d"})


def test_fold_sums_counts_and_bandwidth_weights_hit_ratio_drops_medians() -> None:
    other = fold(
        [
            res("a", "a", 100, 5, edge_hit_ratio=0.5, edge_request_time_0_250k=0.1),
            res("b", "b", 300, 7, edge_hit_ratio=0.9, edge_request_time_0_250k=0.3),
        ]
    )
    assert other.counts[COUNT_INDEX["edge_requests_total"]] == 12
    assert other.gauges[GAUGE_INDEX["edge_bandwidth"]] == 400
    assert math.isnan(other.gauges[GAUGE_INDEX["origin_bandwidth"]])
    assert other.gauges[GAUGE_INDEX["edge_hit_ratio"]] == (0.5 * 100 + 0.9 * 300) / 400
    assert math.isnan(other.gauges[GAUGE_INDEX["edge_request_time_0_250k"]])
