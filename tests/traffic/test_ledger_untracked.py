"""The ledger's per-resource values and the rows it counts are left out of the collector's
passes (``collector.untrack``): a full collection at scale visits a few dicts and runs, not
each resource's series, run values and latest row."""

from __future__ import annotations

import gc

from exporter.traffic.ledger import OTHER, AccountLedger, Reread, Terms
from tests.traffic.ledger_rows import T, res, row, w


def _tracked(objects: list[object]) -> list[object]:
    return [o for o in objects if gc.is_tracked(o)]


def test_series_run_values_and_counted_rows_are_untracked() -> None:
    led = AccountLedger()
    totals, rows = row(30), [res("a", 10), res("b", 20)]
    led.count_first_read(w(0), totals, rows, frozenset({"a"}), T, (300, 5))  # b folded
    led.count_first_read(w(1), row(5), [res("a", 2), res("c", 3)], None, T + 60, (300, 5))
    run = led.pending[0]
    assert sorted(run.resources) == ["a", "b", "c"]  # c joined the run in its second minute
    reread = {"a": res("a", 15), "d": res("d", 4)}
    led.settle(run, Reread(row(40), reread), Terms((5, 10), 10))
    assert sorted(led.series) == sorted(["a", "c", "d", OTHER])
    counted = [totals, totals.counts, totals.gauges]
    for r in rows:
        counted += [r, r.row, r.row.counts, r.row.gauges]
    assert _tracked(counted) == []
    assert _tracked([led.totals, run.totals, *run.resources.values()]) == []
    assert _tracked([*led.series.values(), *(s.values for s in led.series.values())]) == []


def test_an_unlisted_rest_kept_in_the_run_is_untracked() -> None:
    led = AccountLedger()
    led.count_first_read(w(0), row(10), [res("a", 4)], None, T, (300, 5))
    run = led.pending[0]
    led.settle(run, Reread(row(20), {"a": res("a", 5)}), Terms((5,), 10, unlisted=True))
    assert led.pending == []
    assert OTHER in run.resources
    assert not gc.is_tracked(run.resources[OTHER])
