"""Runs between settle stages: how contiguous runs join, what each stage adds and measures, which
run is due first, and what a settle leaves behind (the mutants `make mutation` found alive)."""

from __future__ import annotations

import pytest

from exporter.traffic.ledger import OTHER, AccountLedger, Reread, Terms
from exporter.traffic.parse import COUNT_INDEX
from exporter.traffic.windows import Window
from tests.traffic.ledger_rows import T, res, row, w

REQ = COUNT_INDEX["edge_requests_total"]
HIT = COUNT_INDEX["edge_hit_bytes"]
STAGES = (5, 30)  # two settle reads: 5 and 30 minutes after the newest first read
CAP = 10  # longest run in minutes


def first_read(
    led: AccountLedger,
    window: Window,
    requests: float,
    resources: dict[str, float] | None = None,
    named: frozenset[str] | None = None,
    cap: int = 5,
) -> None:
    rows = [res(rid, n) for rid, n in (resources or {}).items()]
    led.count_first_read(window, row(requests), rows, named, window.start, (300, cap))


def two_runs_at_stage_one(cap: int = CAP) -> AccountLedger:
    """Minutes 0-4 (one run, cap 5) and 5-6 (another, where b appears), each settled once
    without change; the first waits at stage 1 beside the second at stage 0 meanwhile."""
    led = AccountLedger()
    for m in range(7):
        first_read(led, w(m), 10, {"a": 1} if m < 5 else {"a": 1, "b": 2})
    first, second = led.pending
    assert led.settle(first, Reread(row(50), {"a": res("a", 5)}), Terms(STAGES, cap)) is False
    assert [(r.start, r.minutes, r.settled) for r in led.pending] == [
        (w(0).start, 5, 5),
        (w(5).start, 2, 0),  # contiguous, but not waiting for the same age yet
    ]
    reread = {"a": res("a", 2), "b": res("b", 4)}
    assert led.settle(second, Reread(row(20), reread), Terms(STAGES, cap)) is False
    return led


def test_contiguous_runs_at_the_same_stage_join_with_their_counts() -> None:
    led = two_runs_at_stage_one()
    (run,) = led.pending
    assert (run.start, run.end, run.settled) == (w(0).start, w(7).start, 5)
    assert run.last_read_at == w(6).start  # the newer run's first read
    assert run.totals[REQ] == 70
    assert (run.resources["a"][REQ], run.resources["b"][REQ]) == (7, 4)


def test_a_joined_run_adds_only_what_its_last_stage_shows_above_both() -> None:
    led = two_runs_at_stage_one()
    (run,) = led.pending
    reread = {"a": res("a", 9), "b": res("b", 5), "c": res("c", 4)}
    assert led.settle(run, Reread(row(80), reread), Terms(STAGES, CAP)) is True
    assert led.totals[REQ] == 80  # 70 counted + 10 late, nothing twice
    assert led.series["a"].values[REQ] == 9
    assert led.series["b"].values[REQ] == 5  # 2 first, 2 at stage 0, 1 at stage 1
    assert led.series["c"].values[REQ] == 4
    assert led.pending == []
    assert led.late_share == pytest.approx(10 / 80)  # first reads of both runs: 70
    assert led.last_stage_share == pytest.approx(10 / 80)


@pytest.mark.parametrize(("cap", "joined"), [(7, True), (6, False)])
def test_runs_join_while_the_window_stays_within_the_cap(cap: int, joined: bool) -> None:
    led = two_runs_at_stage_one(cap)
    assert [r.minutes for r in led.pending] == ([7] if joined else [5, 2])


def test_runs_apart_in_time_do_not_join_whatever_their_folding() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, {"a": 1, "b": 1}, named=frozenset({"a"}))
    first_read(led, w(1), 10, {"a": 1, "b": 1}, named=None)  # b under its own series now
    first_read(led, w(3), 10, {"a": 1})  # a gap at minute 2
    for run in list(led.pending):
        led.settle(run, Reread(row(10), {}), Terms(STAGES, CAP))
    # folded another way is no reason to read apart (docs/windowing.md); a gap is
    assert [(r.start, r.minutes, r.settled) for r in led.pending] == [
        (w(0).start, 2, 5),
        (w(3).start, 1, 5),
    ]


def test_a_run_joins_the_contiguous_one_even_behind_one_that_does_not_fit() -> None:
    led = AccountLedger()
    for m in (0, 2, 3):  # minute 0 stands apart
        first_read(led, w(m), 10, cap=1)
    for run in list(led.pending):
        led.settle(run, Reread(row(10), {}), Terms(STAGES, CAP))
    assert [(r.start, r.minutes) for r in led.pending] == [(w(0).start, 1), (w(2).start, 2)]


def test_a_resource_first_seen_in_a_later_window_of_a_run_is_compared_on_settle() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, {"a": 2})
    first_read(led, w(1), 10, {"a": 2, "b": 3})
    (run,) = led.pending
    assert run.first == 20  # edge requests of both first reads
    led.settle(run, Reread(row(25), {"a": res("a", 4), "b": res("b", 5)}), Terms((5,), CAP))
    assert (led.series["a"].values[REQ], led.series["b"].values[REQ]) == (4, 5)
    assert led.late_share == pytest.approx(5 / 25)


def test_a_resource_new_at_one_stage_is_compared_at_the_next() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, {"a": 1})
    (run,) = led.pending
    led.settle(run, Reread(row(14), {"a": res("a", 1), "c": res("c", 4)}), Terms((5, 30, 60), CAP))
    led.settle(run, Reread(row(15), {"a": res("a", 1), "c": res("c", 5)}), Terms((5, 30, 60), CAP))
    assert led.series["c"].values[REQ] == 5  # 4, then 1 more: not 4 + 5
    assert (led.series["c"].name, led.series["c"].cname) == ("name-c", "c.example")
    assert (run.settled, led.pending) == (30, [run])
    led.settle(run, Reread(row(15), {"c": res("c", 5)}), Terms((5, 30, 60), CAP))
    assert led.pending == []  # dropped after the third and last stage


def test_a_settle_reports_an_increase_of_the_totals_or_of_a_resource_alone() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, {"a": 4})
    (run,) = led.pending
    stages = (5, 30, 60)
    assert led.settle(run, Reread(row(10), {"a": res("a", 6)}), Terms(stages, CAP)) is True
    assert (led.totals[REQ], led.series["a"].values[REQ]) == (10, 6)
    assert led.settle(run, Reread(row(12), {"a": res("a", 6)}), Terms(stages, CAP)) is True
    assert (led.totals[REQ], led.series["a"].values[REQ]) == (12, 6)
    assert led.settle(run, Reread(row(12), {"a": res("a", 6)}), Terms(stages, CAP)) is False


def test_a_late_resource_without_a_series_goes_to_other_when_folding() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, {"a": 4})
    led.settle(led.pending[0], Reread(row(13), {"c": res("c", 3)}), Terms(STAGES, CAP, fold=True))
    assert led.series[OTHER].values[REQ] == 3
    assert "c" not in led.series


def test_a_single_late_request_is_the_whole_share() -> None:
    led = AccountLedger()
    first_read(led, w(0), 0)
    led.settle(led.pending[0], Reread(row(1), {}), Terms((5,), CAP))
    assert (led.late[5].share, led.late_share) == (1.0, 1.0)


def test_a_settled_stage_clears_the_failures_and_marks_the_ledger_changed() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10)
    (run,) = led.pending
    run.failures, run.retry_at, run.failed_at = 3, T + 900, T + 600
    led.dirty = False
    led.settle(run, Reread(row(10), {}), Terms(STAGES, CAP))
    assert (run.failures, run.retry_at, run.failed_at) == (0, 0.0, 0.0)
    assert led.dirty is True


def test_late_data_of_a_folded_resource_goes_to_other_at_settle() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, {"a": 5, "b": 5}, named=frozenset({"a"}))
    led.settle(led.pending[0], Reread(row(13), {"b": res("b", 8)}), Terms((5,), CAP))
    assert led.series[OTHER].values[REQ] == 8  # 5 at first read, 3 late
    assert "b" not in led.series


def test_each_stage_measures_what_it_added_across_runs() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10, cap=1)
    first_read(led, w(1), 30, cap=1)
    first, second = led.pending
    led.settle(first, Reread(row(15, edge_hit_bytes=100), {}), Terms((5,), CAP))
    assert (led.late[5].requests, led.late[5].hit_bytes) == (5, 100)
    assert led.late[5].share == pytest.approx(5 / 15)
    assert led.late_share == pytest.approx(5 / 15)
    led.settle(second, Reread(row(40), {}), Terms((5,), CAP))  # no hit bytes sent: NaN
    assert (led.late[5].requests, led.late[5].hit_bytes) == (15, 100)  # NaN adds nothing
    assert led.late[5].share == pytest.approx(10 / 40)  # of the latest run


def test_a_stage_that_adds_nothing_measures_a_share_of_zero() -> None:
    led = AccountLedger()
    first_read(led, w(0), 0)
    assert led.settle(led.pending[0], Reread(row(0), {}), Terms((5,), CAP)) is False
    assert (led.late[5].requests, led.late[5].share, led.late_share) == (0, 0.0, 0.0)


def test_the_most_overdue_run_is_due_first_and_a_backoff_ends_on_time() -> None:
    led = AccountLedger()
    first_read(led, w(0), 1, cap=1)
    first_read(led, w(1), 1, cap=1)
    older, newer = led.pending
    now = w(1).start + 300
    assert led.due(now, (5,)) is older  # both due: the one due longer
    older.retry_at = now + 60
    assert led.due(now, (5,)) is newer
    assert led.due(now + 60, (5,)) is older  # due again the moment its backoff ends


def test_prune_keeps_other_while_a_folded_run_is_unsettled_and_a_series_seen_at_the_edge() -> None:
    led = AccountLedger()
    first_read(led, w(0), 2, {"a": 1, "b": 1}, named=frozenset({"a"}))
    assert led.prune(w(0).start + 1) == []  # b's late data would go to __other__
    led.settle(led.pending[0], Reread(row(2), {}), Terms((5,), CAP))
    led.dirty = False
    assert led.prune(w(0).start) == []  # last seen exactly at the limit: kept
    assert led.dirty is False
    assert sorted(led.prune(w(0).start + 1)) == sorted(["a", OTHER])
    assert led.series == {}
    assert led.dirty is True


def test_a_run_read_in_pieces_is_compared_once_its_pieces_cover_it() -> None:
    led = AccountLedger()
    for m in range(3):
        first_read(led, w(m), 10, {"a": 1})
    (run,) = led.pending
    # Minute by minute (the platform answers 1-minute windows), over several polls: each
    # piece is kept, nothing is added until the run is covered, then only the increase.
    assert led.settle_piece(run, w(0), Reread(row(12), None), Terms(STAGES, CAP)) == (False, False)
    assert led.settle_piece(run, w(0), Reread(None, {"a": res("a", 2)}), Terms(STAGES, CAP)) == (
        False,
        False,
    )
    assert led.settle_piece(run, w(1), Reread(row(10), {"a": res("a", 1)}), Terms(STAGES, CAP)) == (
        False,
        False,
    )
    assert (led.totals[REQ], run.settled, run.reading) == (30, 0, 5)
    assert [p.to for p in run.pieces.values()] == [w(2).start, w(2).start]
    assert led.settle_piece(run, w(2), Reread(row(11), {"a": res("a", 1)}), Terms(STAGES, CAP)) == (
        True,
        True,
    )
    assert led.totals[REQ] == 33  # 12 + 10 + 11 read against 30 counted
    assert led.series["a"].values[REQ] == 4
    assert (run.settled, run.pieces, run.done) == (5, {}, frozenset())


def test_halves_read_at_an_age_the_schedule_no_longer_reads_next_are_read_again() -> None:
    led = AccountLedger()
    first_read(led, w(0), 10)
    (run,) = led.pending
    led.settle(run, Reread(row(10), {}), Terms((5, 15, 60), CAP))  # both halves at 5
    led.settle(run, Reread(row(11), None), Terms((5, 15, 60), CAP))  # the totals at 15
    assert (run.settled, run.reading, run.done) == (5, 15, frozenset({"totals"}))
    led.reschedule((5, 60))  # restarted without 15: the read at 60 needs both halves
    assert (run.reading, run.done, run.next_age((5, 60))) == (0, frozenset(), 60)
    led.reschedule((5, 15, 60))  # nothing begun: nothing to undo
    assert run.next_age((5, 15, 60)) == 15
