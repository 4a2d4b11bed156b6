"""The traffic families: names and labels per the contract."""

from __future__ import annotations

from exporter.traffic.families import ACCOUNT, RESOURCE, RESOURCE_INFO, SPECS


def test_names_and_labels_follow_the_contract() -> None:
    names = {s.name for s in SPECS}
    for scope in ("account", "resource"):
        for suffix in (
            "bandwidth_bytes_per_second",
            "requests_total",
            "requests_per_second",
            "responses_total",
            "responses_per_second",
            "responses_by_class_total",
            "responses_by_class_per_second",
            "response_time_median_seconds",
            "edge_hit_ratio",
            "edge_hit_bytes_total",
            "edge_hit_bytes_per_second",
            "window_end_timestamp_seconds",
            "transferred_bytes_total",
        ):
            assert f"cdnvideo_{scope}_{suffix}" in names
    assert len(SPECS) == 32  # 27 traffic families + 5 lateness families
    assert RESOURCE_INFO.name == "cdnvideo_resource_info"
    assert RESOURCE_INFO.labels == ("account", "resource", "resource_name", "cname")
    assert ACCOUNT.responses_total.labels == ("account", "side", "code")
    assert RESOURCE.responses_total.labels == ("account", "resource", "side", "code")
    assert ACCOUNT.responses_by_class_total.labels == ("account", "side", "class")
    assert RESOURCE.responses_by_class_per_second.labels == (
        "account", "resource", "resource_name", "cname", "side", "class",
    )  # fmt: skip
    assert RESOURCE.requests_total.labels == ("account", "resource", "side")
    assert RESOURCE.edge_hit_bytes_total.labels == ("account", "resource")
    assert ACCOUNT.transferred_bytes_total.labels == ("account", "side")
    assert RESOURCE.transferred_bytes_total.labels == ("account", "resource", "side")
    assert RESOURCE.response_time_median.labels == (
        "account", "resource", "resource_name", "cname", "side", "size_range",
    )  # fmt: skip
    assert all(s.unit and s.source for s in SPECS if s is not RESOURCE_INFO)
