"""Final figures of a run -> samples at each minute's start: the platform's keys mapped to the
true-time families, specific codes only, a longer run spread evenly, the selection obeyed."""

from __future__ import annotations

from exporter.remotewrite.samples import FinalRun, minute_series
from exporter.remotewrite.wire import Series

M = 1_767_225_600  # a minute start


def by_labels(series: list[Series]) -> dict[tuple[tuple[str, str], ...], float]:
    return {s.labels: s.value for s in series}


def test_one_minute_is_written_as_the_platforms_figures_at_its_start() -> None:
    run = FinalRun(
        "acme",
        M,
        M + 60,
        {"edge_requests_total": 120.0, "edge_status_404": 7.0, "edge_status_4xx": 9.0,
         "origin_requests_total": 4.0, "edge_transferred_bytes": 5e6, "edge_hit_bytes": 1.0},
        {"101": {"edge_requests_total": 100.0, "edge_status_404": 7.0}},
    )  # fmt: skip
    out = minute_series(run, lambda name: True)
    assert list(out) == [M]
    assert {s.timestamp_ms for s in out[M]} == {M * 1000}
    acc = (("account", "acme"),)
    edge = (("side", "edge"),)
    name = "__name__"
    assert by_labels(out[M]) == {
        ((name, "cdnvideo_minute_account_requests"), *acc, *edge): 120.0,
        ((name, "cdnvideo_minute_account_transferred_bytes"), *acc, *edge): 5e6,
        ((name, "cdnvideo_minute_account_responses"), *acc, *edge, ("code", "404")): 7.0,
        ((name, "cdnvideo_minute_account_requests"), *acc, ("side", "origin")): 4.0,
        ((name, "cdnvideo_minute_resource_requests"), *acc, ("resource", "101"), *edge): 100.0,
    }


def test_a_longer_run_is_spread_evenly_over_its_minutes() -> None:
    run = FinalRun("acme", M, M + 180, {"edge_requests_total": 300.0}, {})
    out = minute_series(run, lambda name: True)
    assert sorted(out) == [M, M + 60, M + 120]
    for minute, series in out.items():
        assert [(s.value, s.timestamp_ms) for s in series] == [(100.0, minute * 1000)]


def test_families_the_selection_leaves_out_are_not_made() -> None:
    run = FinalRun(
        "acme", M, M + 60, {"edge_requests_total": 1.0}, {"101": {"edge_requests_total": 1.0}}
    )
    out = minute_series(run, lambda name: "resource" not in name)
    assert [dict(s.labels)["__name__"] for s in out[M]] == ["cdnvideo_minute_account_requests"]
