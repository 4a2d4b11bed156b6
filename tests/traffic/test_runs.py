"""A run awaiting its settle reads: the age its next read is due at, the window each owed half
reads next, and a half read piece by piece summed once its pieces cover the run."""

from __future__ import annotations

from exporter.traffic.parse import COUNT_INDEX, blank
from exporter.traffic.runs import Run, next_age
from exporter.traffic.windows import Window
from tests.traffic.ledger_rows import T, res, row, w

REQ = COUNT_INDEX["edge_requests_total"]


def test_the_next_age_is_the_schedules_first_above_the_last_read_or_the_last_once_past() -> None:
    assert next_age(0, (5, 30)) == 5
    assert next_age(5, (5, 30)) == 30
    assert next_age(60, (5, 30)) == 60  # a schedule shortened since: one final read, at once


def test_a_run_is_due_its_next_age_after_its_newest_first_read() -> None:
    run = Run(w(0).start, w(3).start, last_read_at=T + 600, totals=blank())
    assert run.due_at((5, 30)) == T + 600 + 5 * 60
    run.settled = 5
    assert run.due_at((5, 30)) == T + 600 + 30 * 60


def test_a_run_longer_than_the_longest_window_is_read_in_pieces_totals_first() -> None:
    run = Run(w(0).start, w(3).start, last_read_at=T, totals=blank())
    assert run.owed(per_resource=True) == ("totals", "resources")
    assert run.next_read(per_resource=True, longest=5) == (
        Window(w(0).start, w(3).start),
        ("totals", "resources"),
    )
    assert run.totals_piece(w(0), row(4), shaped=False) is None
    assert run.next_read(per_resource=True, longest=1) == (w(0), ("resources",))
    assert run.next_window("totals", longest=1) == w(1)


def test_a_half_is_summed_once_its_pieces_cover_the_run_and_its_shape_kept_when_asked() -> None:
    run = Run(w(0).start, w(2).start, last_read_at=T, totals=blank())
    assert run.resources_piece(w(0), {"a": res("a", 2)}, shaped=True) is None
    whole = run.resources_piece(w(1), {"a": res("a", 3), "b": res("b", 1)}, shaped=True)
    assert whole is not None
    assert {rid: r.row.counts[REQ] for rid, r in whole.items()} == {"a": 5, "b": 1}
    assert "resources" not in run.pieces
    assert [(p.start, p.end) for p in run.shape["resources"]] == [
        (w(0).start, w(0).end),
        (w(1).start, w(1).end),
    ]
