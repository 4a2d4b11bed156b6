"""The ledger: counting first reads, runs awaiting a settle read, increases only, pruning."""

from __future__ import annotations

import tracemalloc

from exporter.traffic.ledger import OTHER, AccountLedger, Reread, Terms
from exporter.traffic.parse import COUNT_INDEX
from tests.traffic.ledger_rows import T, res, row, w

REQ = COUNT_INDEX["edge_requests_total"]


def test_first_reads_count_and_merge_into_runs_up_to_the_cap() -> None:
    led = AccountLedger()
    for m in range(7):
        led.count_first_read(w(m), row(10), [res("a", 1)], None, T + m * 60, (300, 5))
    assert led.totals[REQ] == 70
    assert led.series["a"].values[REQ] == 7
    assert led.cursor == w(6).start
    assert [(r.start, r.minutes) for r in led.pending] == [(w(0).start, 5), (w(5).start, 2)]
    assert led.pending[0].totals[REQ] == 50
    assert led.pending[0].resources["a"][REQ] == 5


def test_a_due_run_is_closed_to_new_windows() -> None:
    led = AccountLedger()
    led.count_first_read(w(0), row(1), [], None, T, (300, 5))
    assert led.due(T + 299, (5,)) is None
    assert led.due(T + 300, (5,)) is led.pending[0]
    led.count_first_read(w(1), row(1), [], None, T + 300, (300, 5))
    assert len(led.pending) == 2


def test_settle_adds_the_late_increase_once_and_drops_the_run() -> None:
    led = AccountLedger()
    led.count_first_read(w(0, 2), row(70), [res("a", 7), res("b", 3)], None, T, (300, 5))
    run = led.pending[0]
    reread = {"a": res("a", 10), "b": res("b", 2), "c": res("c", 4)}
    assert led.settle(run, Reread(row(100), reread), Terms((5,), 10))
    assert led.totals[REQ] == 100
    assert led.series["a"].values[REQ] == 10
    assert led.series["b"].values[REQ] == 3  # a decrease is never subtracted
    assert led.series["c"].values[REQ] == 4  # a resource seen only on re-read gets a series
    assert led.pending == []


def test_settle_routes_unnamed_resources_to_other_when_folding() -> None:
    led = AccountLedger()
    led.count_first_read(w(0), row(10), [res("a", 5), res("b", 5)], frozenset({"a"}), T, (300, 5))
    assert led.series[OTHER].values[REQ] == 5
    assert "b" not in led.series
    led.settle(
        led.pending[0],
        Reread(row(12), {"a": res("a", 6), "b": res("b", 6)}),
        Terms((5,), 10, fold=True),
    )
    assert led.series["a"].values[REQ] == 6
    assert led.series[OTHER].values[REQ] == 6


def test_prune_keeps_series_owed_a_settle_read() -> None:
    led = AccountLedger()
    led.count_first_read(w(0), row(2), [res("a", 1), res("b", 1)], None, T, (60, 1))
    led.count_first_read(w(1), row(1), [res("a", 1)], None, T + 60, (60, 1))
    assert led.prune(T + 1) == []  # b was last seen before T + 1, but its minute is unsettled
    led.settle(
        led.pending[0], Reread(row(2), {"a": res("a", 1), "b": res("b", 1)}), Terms((5,), 10)
    )
    assert led.prune(T + 1) == ["b"]
    assert set(led.series) == {"a"}
    assert led.prune(T + 60) == []  # a was seen at T + 60


def test_a_thousand_resources_and_ten_runs_stay_small() -> None:
    resources = [res(str(i), 1000 + i) for i in range(1000)]
    for r in resources:
        for i in range(len(r.row.counts)):
            r.row.counts[i] = float(i)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    led = AccountLedger()
    for m in range(10):  # cap 1: every window is its own run
        led.count_first_read(w(m), row(1), resources, None, T + m * 60, (600, 1))
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(led.pending) == 10
    assert used < 6_000_000, used


def test_late_data_of_a_run_a_resource_was_folded_in_goes_to_other() -> None:
    led = AccountLedger()
    # Minute 0: b is folded into __other__; minute 1: b is in the top N under its own series.
    led.count_first_read(w(0), row(8), [res("a", 5), res("b", 3)], frozenset({"a"}), T, (300, 5))
    led.count_first_read(w(1), row(8), [res("a", 1), res("b", 7)], frozenset({"b"}), T, (300, 5))
    # One run whatever the folding (one settle read, as the docs price it); b and a were
    # each folded in one of its minutes.
    assert [(r.start, r.end, r.folded) for r in led.pending] == [
        (w(0).start, w(1).end, frozenset({"a", "b"}))
    ]
    assert led.series[OTHER].values[REQ] == 3 + 1
    assert led.series["b"].values[REQ] == 7
    # The re-read: b grew by 2 and a by 1; their late data goes to __other__, where part of
    # their first reads went, so the resource series still sum to the totals.
    led.settle(
        led.pending[0],
        Reread(row(19), {"a": res("a", 7), "b": res("b", 12)}),
        Terms((5,), 10, fold=True),
    )
    assert led.series["b"].values[REQ] == 7
    assert led.series["a"].values[REQ] == 5
    assert led.series[OTHER].values[REQ] == 4 + 2 + 1
    assert sum(s.values[REQ] for s in led.series.values()) == led.totals[REQ] == 19
