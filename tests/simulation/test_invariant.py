"""The checker itself: each rule can fail (fed reads and scrapes that break it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.remotewrite.wire import Series, encode
from exporter.simulator.churn import Change
from exporter.simulator.traffic_model import EDGE_REQ
from exporter.simulator.traffic_window import COLUMN_KEYS
from tests.simulation.harness import World
from tests.simulation.invariant import (
    BYTES_PER_RATE_MINUTE,
    INFO,
    LATE,
    MINUTE,
    OWED,
    RESOURCE_REQUESTS,
    Checker,
    Key,
    _answered,
    _clipped,
    _scaled,
)
from tests.simulation.scenario import T0, Daemon, Event, draw
from tests.simulation.transport import Read

SCHEDULE = Daemon(revisit=(5, 15))
OWED_KIND = "owed misreported"
LATE_HIT_BYTES = "cdnvideo_traffic_late_hit_bytes_total"  # docs/metrics.md


def _checker(tmp_path: Path, daemon: Daemon = SCHEDULE) -> Checker:
    scenario = replace(draw(3, 120), accounts=("acc1",), daemon=daemon, events=(), quirks=())
    checker = World(scenario, tmp_path).checker
    checker.started(T0, daemon)
    return checker


def _read(checker: Checker, at: float, start: float, minutes: int = 1) -> None:
    for resources in (False, True):
        checker.transport.reads.append(
            Read(at, "acc1", int(start), int(start) + minutes * MINUTE, resources, 200, True)
        )


def _owed_at_end(checker: Checker, gauge: float, end: float) -> list[str]:
    checker.scrape(end, {OWED: {(OWED, (("account", "acc1"),)): gauge}})
    return [v.detail for v in checker.finish(end) if v.kind == "owed misreported"]


def _first_reads(checker: Checker, n: int) -> float:
    """``n`` minutes first read as each closes (06:00 on), never settled; the end."""
    for i in range(n):
        _read(checker, T0 + (i + 1) * MINUTE + 120, T0 + i * MINUTE)
    return T0 + 60 * MINUTE


def test_minutes_past_every_age_unread_must_be_in_the_owed_gauge(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    end = _first_reads(checker, 30)
    assert _owed_at_end(checker, 0, end) == [
        "acc1: cdnvideo_traffic_windows_owed 0 at the end, the reads made leave 30 to 30 "
        "minutes owed a settle read"
    ]


def test_an_owed_gauge_naming_the_minutes_owed_holds(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    assert _owed_at_end(checker, 30, _first_reads(checker, 30)) == []


def _settled(checker: Checker, n: int) -> float:
    """``n`` minutes each read at first and at each age of (5, 15); the end."""
    for i in range(n):
        m = T0 + i * MINUTE
        for age in (0, 5, 15):
            _read(checker, m + MINUTE + 120 + age * MINUTE, m)
    return T0 + 60 * MINUTE


def test_an_owed_gauge_at_0_when_every_age_was_read_holds(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    assert _owed_at_end(checker, 0, _settled(checker, 10)) == []


def test_an_owed_gauge_above_what_is_owed_fails(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    assert _owed_at_end(checker, 4, _settled(checker, 10)) == [
        "acc1: cdnvideo_traffic_windows_owed 4 at the end, the reads made leave 0 to 0 "
        "minutes owed a settle read"
    ]


def test_minutes_not_yet_due_may_be_counted_either_way(tmp_path: Path) -> None:
    """First read 3 minutes before the end, schedule 5: owed or not, the gauge decides."""
    checker = _checker(tmp_path, Daemon(revisit=5))
    _read(checker, T0 + 57 * MINUTE, T0 + 54 * MINUTE)
    end = T0 + 60 * MINUTE
    assert _owed_at_end(checker, 1, end) == []


def _read_twice_doubted(tmp_path: Path, minute: int) -> list[str]:
    """Minute 06:20 first read at 06:23 with (5, 15); its read at 5 comes at the end of its
    tolerance, a poll after a read of minute ``minute`` whose totals reply bore a ``Date``
    off the platform's clock (a read the daemon doubts and applies none of, seed 5030)."""
    checker = _checker(tmp_path)
    m = T0 + 20 * MINUTE
    f = m + 3 * MINUTE
    _read(checker, f, m)
    for resources in (False, True):
        late = Read(f + 645, "acc1", minute, minute + MINUTE, resources, 200, True)
        checker.transport.reads.append(replace(late, misdated=not resources))
    _read(checker, f + 660, m)
    _read(checker, f + 900, m)
    return [v.detail for v in checker.finish(T0 + 60 * MINUTE) if v.kind == "late settle read"]


def test_a_read_set_aside_on_a_doubted_clock_is_made_again_a_poll_later(tmp_path: Path) -> None:
    assert _read_twice_doubted(tmp_path, T0 + 20 * MINUTE) == []


def test_a_read_set_aside_excuses_no_other_minute(tmp_path: Path) -> None:
    assert _read_twice_doubted(tmp_path, T0 + 21 * MINUTE) == [
        "2 reads, e.g. acc1 totals 06:20:00 age 5 (first read 06:23:00) read 11.0 min after"
    ]


def test_a_doubted_read_counts_nothing() -> None:
    """Both halves of a read asked together are set aside when either reply's ``Date`` is
    off; the same window read again at the same instant (planned again) is a read."""
    from tests.simulation.invariant import _answered

    reads = [
        Read(300.0, "a", 0, 60, False, 200, True),
        Read(300.0, "a", 0, 60, True, 200, True, misdated=True),
        Read(300.0, "a", 0, 60, False, 200, True),
        Read(300.0, "a", 0, 60, True, 200, True),
        Read(600.0, "a", 0, 60, False, 200, True, misdated=True),
        Read(600.0, "a", 0, 60, True, 200, True),
    ]
    assert dict(_answered(reads)) == {("a", False, 0): [300.0], ("a", True, 0): [300.0]}


def _series(resource: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return (RESOURCE_REQUESTS, (("account", "acc1"), ("resource", resource), ("side", "edge")))


def test_a_resource_series_gone_before_the_end_fails(tmp_path: Path) -> None:
    """A deleted resource's counters stay for series_retention_hours (longer than a day)."""
    checker = _checker(tmp_path)
    both = {RESOURCE_REQUESTS: {_series("100001"): 0.0, _series("100002"): 0.0}}
    checker.scrape(T0 + 60, both)
    checker.scrape(T0 + 75, {RESOURCE_REQUESTS: {_series("100001"): 0.0}})
    found = [v.detail for v in checker.finish(T0 + 90) if v.kind == "series vanished"]
    assert found == [
        '1 series, e.g. cdnvideo_resource_requests_total{account="acc1",resource="100002",'
        'side="edge"}'
    ]


def test_resource_series_kept_to_the_end_hold(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    both = {RESOURCE_REQUESTS: {_series("100001"): 0.0, _series("100002"): 0.0}}
    checker.scrape(T0 + 60, both)
    checker.scrape(T0 + 75, both)
    assert [v for v in checker.finish(T0 + 90) if v.kind == "series vanished"] == []


def _named(checker: Checker, names: list[str], again: bool = False) -> list[str]:
    """Resource 100001 renamed "new" at 06:00 and read at 06:05 (``again``: renamed "newer"
    at 06:55 too); at 07:00 the info series names it ``names``."""
    checker.sim.rename_resource("acc1", "100001", "new")
    if again:
        checker.sim.clock.set(T0 + 55 * MINUTE)
        checker.sim.rename_resource("acc1", "100001", "newer")
        checker.sim.clock.set(T0)
    _read(checker, T0 + 5 * MINUTE, T0 + 3 * MINUTE)
    info = {
        (
            INFO,
            (("account", "acc1"), ("cname", "c"), ("resource", "100001"), ("resource_name", n)),
        ): 1.0
        for n in names
    }
    end = T0 + 60 * MINUTE
    checker.scrape(end, {INFO: info})
    return [v.detail for v in checker.finish(end) if v.kind == "stale resource name"]


def test_a_renamed_resource_named_anew_holds(tmp_path: Path) -> None:
    assert _named(_checker(tmp_path), ["new"]) == []


def test_a_renamed_resource_still_named_the_old_way_fails(tmp_path: Path) -> None:
    assert _named(_checker(tmp_path), ["acc1-www"]) == [
        "acc1 resource 100001 renamed 'new' at 06:00:00, cdnvideo_resource_info names ['acc1-www']"
    ]


def test_a_renamed_resource_named_twice_fails(tmp_path: Path) -> None:
    assert _named(_checker(tmp_path), ["acc1-www", "new"]) == [
        "acc1 resource 100001 renamed 'new' at 06:00:00, cdnvideo_resource_info names "
        "['acc1-www', 'new']"
    ]


def _renamed_again(tmp_path: Path, names: list[str]) -> list[str]:
    """Renamed at 06:00 and again 5 minutes before the end: the second rename is too recent
    to be required on the info series, not too recent to show there (seed 5872)."""
    return _named(_checker(tmp_path), names, again=True)


def test_a_resource_renamed_again_lately_may_keep_the_name_before(tmp_path: Path) -> None:
    assert _renamed_again(tmp_path, ["new"]) == []


def test_a_resource_renamed_again_lately_may_show_the_newest_name(tmp_path: Path) -> None:
    assert _renamed_again(tmp_path, ["newer"]) == []


def test_a_resource_renamed_again_lately_still_named_the_first_way_fails(tmp_path: Path) -> None:
    assert _renamed_again(tmp_path, ["acc1-www"]) == [
        "acc1 resource 100001 renamed 'new' at 06:00:00, cdnvideo_resource_info names ['acc1-www']"
    ]


def _caught_up(tmp_path: Path, twice: bool) -> list[str]:
    """Resource 100001's series appears at 06:30 at 0; its next scrape shows the 20 minutes
    from 06:00 read for the first time after it appeared (a catch-up), or twice that."""
    checker = _checker(tmp_path)
    since = T0 + 30 * MINUTE
    checker.scrape(since, {RESOURCE_REQUESTS: {_series("100001"): 0.0}})
    checker.transport.reads.append(Read(since + 5, "acc1", T0, T0 + 20 * MINUTE, True, 200, True))
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    now = since + 15
    whole = sum(
        _scaled(traffic.traffic.rows(m)[0][EDGE_REQ], checker._fraction(m, now))
        for m in range(T0, T0 + 20 * MINUTE, MINUTE)
    )
    assert whole > 1000
    checker.scrape(now, {RESOURCE_REQUESTS: {_series("100001"): whole * (2 if twice else 1)}})
    return [v.kind for v in checker.violations]


def test_a_series_born_before_a_catch_up_may_rise_by_the_minutes_caught_up(
    tmp_path: Path,
) -> None:
    assert _caught_up(tmp_path, twice=False) == []


def test_a_series_born_before_a_catch_up_rising_by_more_jumps(tmp_path: Path) -> None:
    assert _caught_up(tmp_path, twice=True) == ["series jump"]


def _back_after_absence(tmp_path: Path, extra: float) -> list[str]:
    """Figures rising for 15 minutes after a minute closes; resource 100001 deleted at 06:05.
    Its edge requests: 06:00 first read at 06:02, 06:04 at 06:06 and again at 06:30, shown
    as they read (last changed at 06:31); then the series leaves ``/metrics`` (the area
    failing longer than its fragment's age) and comes back at 06:46, after a settle read of
    06:00 at 06:45 (its first since 06:02), with what that read added, plus ``extra``. The
    kinds found."""
    scenario = replace(
        draw(3, 120), accounts=("acc1",), daemon=SCHEDULE, events=(), quirks=(), late_seconds=900.0
    )
    checker = World(scenario, tmp_path).checker
    checker.started(T0, SCHEDULE)
    reader = checker.sim.traffic_reader("acc1")
    assert reader is not None
    traffic = reader.traffic
    traffic.spans[0] = (traffic.spans[0][0], T0 + 5 * MINUTE)

    def seen(m: int, t: float) -> float:
        return checker._visible(m, [traffic.rows(m)[0][EDGE_REQ]], t)

    a, b = T0, T0 + 4 * MINUTE
    key = _series("100001")
    checker.scrape(T0 + MINUTE, {RESOURCE_REQUESTS: {key: 0.0}})
    _read(checker, T0 + 2 * MINUTE, a)
    _read(checker, T0 + 6 * MINUTE, b)
    shown = seen(a, T0 + 2 * MINUTE) + seen(b, T0 + 6 * MINUTE)
    checker.scrape(T0 + 7 * MINUTE, {RESOURCE_REQUESTS: {key: shown}})
    _read(checker, T0 + 30 * MINUTE, b)
    shown += seen(b, T0 + 30 * MINUTE) - seen(b, T0 + 6 * MINUTE)
    checker.scrape(T0 + 31 * MINUTE, {RESOURCE_REQUESTS: {key: shown}})
    checker.scrape(T0 + 32 * MINUTE, {RESOURCE_REQUESTS: {}})  # gone: the area failing
    _read(checker, T0 + 45 * MINUTE, a)
    added = seen(a, T0 + 45 * MINUTE) - seen(a, T0 + 2 * MINUTE)
    assert added > 0
    checker.scrape(T0 + 46 * MINUTE, {RESOURCE_REQUESTS: {key: shown + added + extra}})
    return [v.kind for v in checker.violations]


def test_a_series_back_after_an_absence_may_rise_by_what_reads_since_added(
    tmp_path: Path,
) -> None:
    """Seed 1050 (the second replica of a pair): a settle read made while the series was
    away adds the late data of a minute last read before it went."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    assert _back_after_absence(tmp_path / "a", 0.0) == []
    assert _back_after_absence(tmp_path / "b", 1000.0) == ["series jump"]


HELD = (Event(3 * MINUTE, "unwritable"), Event(10 * MINUTE, "writable"))
LEFT_OUT = (
    Event(3 * MINUTE, "exclude", (("family", "resource_requests"),)),
    Event(10 * MINUTE, "exclude", (("family", ""),)),
)


def _held_back(
    tmp_path: Path, whole: bool, events: tuple[Event, Event] = HELD
) -> tuple[list[str], int, int]:
    """Resource 100001 first read at 06:05 while the state volume cannot be written (06:03
    to 06:10; or while its family is left out, ``LEFT_OUT``), its series first shown at 0
    after that and read again at 06:12; at the end it shows the read after, or (``whole``)
    both reads. Returns the checker's findings and what each read showed (after, before)."""
    checker = _checker(tmp_path)
    checker.event(T0 + events[0].at, events[0])
    _read(checker, T0 + 5 * MINUTE, T0 + 3 * MINUTE)
    checker.event(T0 + events[1].at, events[1])
    checker.scrape(T0 + 10 * MINUTE + 30, {RESOURCE_REQUESTS: {_series("100001"): 0.0}})
    _read(checker, T0 + 12 * MINUTE, T0 + 10 * MINUTE)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None

    def visible(m: float, at: float) -> int:
        return _scaled(traffic.traffic.rows(int(m))[0][EDGE_REQ], checker._fraction(m, at))

    after = visible(T0 + 10 * MINUTE, T0 + 12 * MINUTE)
    held = visible(T0 + 3 * MINUTE, T0 + 5 * MINUTE)
    assert after > 0
    assert held > 0
    end = T0 + 60 * MINUTE
    checker.scrape(end, {RESOURCE_REQUESTS: {_series("100001"): after + (held if whole else 0)}})
    return [v.detail for v in checker.finish(end) if v.kind == "miscounted"], after, held


def test_a_series_new_while_saves_failed_counts_the_reads_after(tmp_path: Path) -> None:
    """While the state file cannot be written a new series is not shown and what it counts
    is dropped; shown at 0 after a save works, it counts from there (docs/windowing.md;
    seeds 4107, 4144 found the checker counting the dropped reads)."""
    assert _held_back(tmp_path, whole=False)[0] == []


def test_a_series_first_shown_after_a_reload_took_its_family_in_counts_the_reads_after(
    tmp_path: Path,
) -> None:
    """A key counted while its family was left out appears at 0 when a reload takes the
    family in, and counts what follows (docs/windowing.md; seed 4043: a resource added while
    cdnvideo_resource_requests_total was excluded)."""
    assert _held_back(tmp_path, whole=False, events=LEFT_OUT)[0] == []
    (tmp_path / "whole").mkdir()
    found, after, before = _held_back(tmp_path / "whole", whole=True, events=LEFT_OUT)
    assert found == [
        f'{RESOURCE_REQUESTS}{{account="acc1",resource="100001",side="edge"}} {after + before}, '
        f"the reads made show {after} (+{before})"
    ]


def test_a_series_new_while_saves_failed_showing_the_dropped_reads_fails(
    tmp_path: Path,
) -> None:
    found, after, held = _held_back(tmp_path, whole=True)
    assert found == [
        f'{RESOURCE_REQUESTS}{{account="acc1",resource="100001",side="edge"}} {after + held}, '
        f"the reads made show {after} (+{held})"
    ]


ACCOUNT_EDGE = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))


def _owed_read(tmp_path: Path, shown: int, gauge: float, extra: float = 0.0) -> list[str]:
    """Minute 06:03 first read at 06:05 and read again at 06:10 (its age 5 of (5, 15)) as
    the day ends: still owed its age 15. The account's counter shows the first read (0) or
    both (1), plus ``extra``; ``cdnvideo_traffic_windows_owed`` shows ``gauge``. The
    findings, the figures in a wrong counter's line replaced by what the reads show (G: the
    counter's, W: the last read's, S: what the last read adds)."""
    checker = _checker(tmp_path)
    m = T0 + 3 * MINUTE
    reads = (T0 + 5 * MINUTE, T0 + 10 * MINUTE)
    for at in reads:
        _read(checker, at, m)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    rows = traffic.traffic.rows(m)
    totals = [checker._visible(m, [row[EDGE_REQ] for row in rows], at) for at in reads]
    assert totals[1] > totals[0]  # late data arrived between the two reads
    end = T0 + 11 * MINUTE
    got = totals[shown] + extra
    checker.scrape(
        end, {ACCOUNT_EDGE[0]: {ACCOUNT_EDGE: got}, OWED: {(OWED, (("account", "acc1"),)): gauge}}
    )
    want, short = totals[1], totals[1] - totals[0]
    return [
        v.detail.replace(f"{got:.0f}", "G")
        .replace(f"{want:.0f}", "W")
        .replace(f"{got - want:+.0f}", "G-W")
        .replace(f"{short:.0f}", "S")
        for v in checker.finish(end)
        if v.kind == "miscounted"
    ]


def test_a_minute_owed_a_read_may_show_the_read_before_its_last(tmp_path: Path) -> None:
    """A settle read in pieces, or set aside on a doubted clock, is applied later: while the
    owed gauge names the minute, its counter may lack what the last read added."""
    assert _owed_read(tmp_path, shown=0, gauge=1) == []


def test_a_counter_short_of_the_last_read_with_nothing_owed_fails(tmp_path: Path) -> None:
    assert _owed_read(tmp_path, shown=0, gauge=0) == [
        'cdnvideo_account_requests_total{account="acc1",side="edge"} G, the reads made show W '
        "(G-W), S of it owed a read"
    ]


def test_a_counter_above_the_last_read_fails(tmp_path: Path) -> None:
    assert _owed_read(tmp_path, shown=1, gauge=1, extra=1.0) == [
        'cdnvideo_account_requests_total{account="acc1",side="edge"} G, the reads made show W (G-W)'
    ]


def test_a_counter_at_the_last_read_holds(tmp_path: Path) -> None:
    assert _owed_read(tmp_path, shown=1, gauge=1) == []
    (tmp_path / "again").mkdir()
    assert _owed_read(tmp_path / "again", shown=1, gauge=0) == []


def _bound_after_a_restart(tmp_path: Path, settled: bool) -> tuple[float, float]:
    """Minutes 06:00-06:04 first read at 06:06, while their figures still rise (late 900 s);
    the account series, shown before, is left out when the state is saved at 06:07; the next
    start (07:10) shows it at 0, and (``settled``) a settle read after the start reads those
    minutes again. Returns the rise the checker allows at 07:10:30, and what that settle
    read adds: what the platform added to them while the daemon was down."""
    tmp_path.mkdir()
    checker = _checker(tmp_path)
    key = ACCOUNT_EDGE
    checker.scrape(T0 + 4 * MINUTE, {key[0]: {key: 0.0}})
    checker.scrape(T0 + 5 * MINUTE, {key[0]: {key: 1.0}})
    _read(checker, T0 + 6 * MINUTE, T0, minutes=5)
    checker.stopped(T0 + 7 * MINUTE)
    start = T0 + 70 * MINUTE
    checker.started(start, SCHEDULE)
    checker.scrape(start + 15, {key[0]: {key: 0.0}})
    if settled:
        _read(checker, start + 20, T0, minutes=5)
    checker._new_reads()
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    now = start + 30
    late = sum(
        _scaled(row[EDGE_REQ], checker._fraction(m, now))
        - _scaled(row[EDGE_REQ], checker._fraction(m, T0 + 6 * MINUTE))
        for m in range(T0, T0 + 5 * MINUTE, MINUTE)
        for row in traffic.traffic.rows(m)
    )
    bound = checker._growth(key, start + 15, now)
    assert bound is not None
    return bound, late


def test_a_series_back_at_a_start_may_rise_by_what_a_settle_read_adds(tmp_path: Path) -> None:
    """A key counts every read made while it is exported: a settle read after the start adds
    what arrived while the daemon was down, and the rise allowed grows by exactly that
    (seed 4065)."""
    (without, _), (settled, late) = (
        _bound_after_a_restart(tmp_path / "a", settled=False),
        _bound_after_a_restart(tmp_path / "b", settled=True),
    )
    assert late > 1000
    assert settled - without == late


def test_an_owed_gauge_is_held_to_the_reads_at_its_last_scrape(tmp_path: Path) -> None:
    """A day that ends with the daemon down (a restart's downtime): minute 06:00 first read at
    06:03, the gauge 0 at the stop at 06:04 (nothing due yet), the day ends at 07:00 with no
    daemon to read it (seeds 4105, 4136: 53 minutes "owed" by a daemon stopped 67 minutes
    before the end)."""
    checker = _checker(tmp_path)
    _read(checker, T0 + 3 * MINUTE, T0)
    stop = T0 + 4 * MINUTE
    checker.scrape(stop, {OWED: {(OWED, (("account", "acc1"),)): 0.0}})
    checker.stopped(stop, killed=True)
    assert [v.detail for v in checker.finish(T0 + 60 * MINUTE) if v.kind == OWED_KIND] == []


def test_an_owed_gauge_at_0_is_still_held_to_its_last_scrape(tmp_path: Path) -> None:
    """As above, with the minute's last age past due at the stop (06:30): owed, not 0."""
    checker = _checker(tmp_path)
    _read(checker, T0 + 3 * MINUTE, T0)
    stop = T0 + 30 * MINUTE
    checker.scrape(stop, {OWED: {(OWED, (("account", "acc1"),)): 0.0}})
    checker.stopped(stop, killed=True)
    assert [v.detail for v in checker.finish(T0 + 60 * MINUTE) if v.kind == OWED_KIND] == [
        "acc1: cdnvideo_traffic_windows_owed 0 at the end, the reads made leave 1 to 1 "
        "minutes owed a settle read"
    ]


def _restarted(tmp_path: Path, ages_read: int, gauge: float) -> list[str]:
    """Minute 06:00 first read at 06:03; a kill and a start at 06:05; then ``ages_read`` settle
    reads, overdue, from 06:40 on (a backlog); the gauge at 07:00."""
    checker = _checker(tmp_path)
    _read(checker, T0 + 3 * MINUTE, T0)
    restart = T0 + 5 * MINUTE
    checker.stopped(restart, killed=True)
    checker.started(restart, SCHEDULE)
    for i in range(ages_read):
        _read(checker, T0 + (40 + i) * MINUTE, T0)
    return _owed_at_end(checker, gauge, T0 + 60 * MINUTE)


def test_one_overdue_read_after_a_restart_settles_one_age(tmp_path: Path) -> None:
    """Each settle read moves a run on by one age, however overdue (docs/windowing.md): one
    read at 06:40 reads age 5, and age 15 is still owed (seed 4135: the gauge named the
    minutes read once after a kill at their first age, the checker took that read for the
    last age's)."""
    assert _restarted(tmp_path, 1, 1) == []


def test_a_read_for_each_age_after_a_restart_leaves_nothing_owed(tmp_path: Path) -> None:
    assert _restarted(tmp_path, 2, 1) == [
        "acc1: cdnvideo_traffic_windows_owed 1 at the end, the reads made leave 0 to 0 "
        "minutes owed a settle read"
    ]


def _doubted(tmp_path: Path, off: bool) -> list[str]:
    """Minute 06:00 first read at 06:03, one reply's Date an hour off when ``off`` (quirk
    bogus-date: the exporter counts nothing from that fetch), read again at 06:03:15 (the
    first read counted), at 06:12 (its first age, 5, overdue); the gauge at 06:30 names the
    minute as owed age 15."""
    checker = _checker(tmp_path)
    at = T0 + 3 * MINUTE
    checker.transport.reads.append(Read(at, "acc1", T0, T0 + MINUTE, False, 200, True))
    checker.transport.reads.append(Read(at, "acc1", T0, T0 + MINUTE, True, 200, True, False, off))
    _read(checker, at + 15, T0)
    _read(checker, T0 + 12 * MINUTE, T0)
    return _owed_at_end(checker, 1, T0 + 30 * MINUTE)


def test_a_fetch_with_a_doubted_date_is_no_read(tmp_path: Path) -> None:
    """The doubted fetch reads nothing: the minute has had its first read and its age-5 read,
    and owes age 15 (seed 5042: the checker counted the doubted reads as ages read)."""
    assert _doubted(tmp_path, off=True) == []


def test_the_same_reads_with_true_dates_read_every_age(tmp_path: Path) -> None:
    """Without the doubted Date, 06:03 was the first read, 06:03:15 age 5 and 06:12 age 15."""
    assert _doubted(tmp_path, off=False) == [
        "acc1: cdnvideo_traffic_windows_owed 1 at the end, the reads made leave 0 to 0 "
        "minutes owed a settle read"
    ]


def _fetch(resources_status: int) -> dict[tuple[str, bool, int], list[float]]:
    """One fetch of 06:00's halves at 06:03: the totals answered with a true Date, the
    per-resource half answered ``resources_status`` with a Date an hour off."""
    at = T0 + 3 * MINUTE
    reads = [
        Read(at, "acc1", T0, T0 + MINUTE, False, 200, True),
        Read(
            at,
            "acc1",
            T0,
            T0 + MINUTE,
            True,
            resources_status,
            resources_status == 200,
            misdated=True,
        ),
    ]
    return dict(_answered(reads))


def test_an_answered_reply_with_a_date_off_voids_its_fetch() -> None:
    assert _fetch(200) == {}


def test_a_refused_reply_with_a_date_off_voids_nothing() -> None:
    """The exporter reads the platform's clock from answered replies only: a 420 with a wrong
    Date doubts nothing, and the totals answered beside it are a read (seed 5347: a settle
    read's totals half counted beside a refused per-resource half)."""
    assert _fetch(420) == {("acc1", False, T0): [T0 + 3 * MINUTE]}


def _read_again(tmp_path: Path, again: float) -> list[str]:
    """Minute 06:20 (past the start's disturbance) first read at 06:23, at 06:28 (age 5); at
    06:38:30 (age 15, due 06:38) one reply's Date an hour off, so the exporter throws the
    fetch away and reads the minute again ``again`` seconds past 06:38."""
    checker = _checker(tmp_path)
    m = T0 + 20 * MINUTE
    _read(checker, m + 3 * MINUTE, m)
    _read(checker, m + 8 * MINUTE, m)
    at = m + 18 * MINUTE + 30
    checker.transport.reads.append(Read(at, "acc1", m, m + MINUTE, False, 200, True))
    checker.transport.reads.append(Read(at, "acc1", m, m + MINUTE, True, 200, True, misdated=True))
    _read(checker, m + 18 * MINUTE + again, m)
    return [v.detail for v in checker.finish(T0 + 60 * MINUTE) if v.kind == "late settle read"]


def test_a_read_again_at_the_next_poll_after_a_doubted_date_is_in_time(tmp_path: Path) -> None:
    """Seed 5567: the age-1 read doubted 30 s after its due time, read again 15 s later."""
    assert _read_again(tmp_path, 50) == []


def test_a_read_again_later_than_the_next_polls_is_late(tmp_path: Path) -> None:
    """Age 15 of (5, 15) may wait for the newest minute of a window whose first reads lie
    less than 5 minutes apart and two poll ticks (45 s); the read set aside adds one poll
    (15 s): 06:44:00 at the latest."""
    assert _read_again(tmp_path, 360) == []
    (tmp_path / "later").mkdir()
    assert _read_again(tmp_path / "later", 390) == [
        "2 reads, e.g. acc1 totals 06:20:00 age 15 (first read 06:23:00) read 21.5 min after"
    ]


def _ages_read(tmp_path: Path, second: float, third: float) -> list[str]:
    """Minute 06:20 (past the start's disturbance) first read at 06:23 with (5, 15), read
    again ``second`` and ``third`` minutes after that first read. The age findings."""
    checker = _checker(tmp_path)
    m = T0 + 20 * MINUTE
    f = m + 3 * MINUTE
    for after in (0.0, second, third):
        _read(checker, f + after * MINUTE, m)
    kinds = ("early settle read", "late settle read", "settle read missing")
    return [f"{v.kind}: {v.detail}" for v in checker.finish(T0 + 90 * MINUTE) if v.kind in kinds]


def test_a_read_at_each_age_holds(tmp_path: Path) -> None:
    assert _ages_read(tmp_path, 5, 15) == []


def test_a_read_before_its_age_is_early(tmp_path: Path) -> None:
    """Age 15 read 2.5 minutes early (issue 48 failure 5: the newest minutes of a merged run
    read before their age, figures not yet that old), whatever window it was read in."""
    assert _ages_read(tmp_path, 5, 12.5) == [
        "early settle read: 2 reads, e.g. acc1 totals 06:20:00 age 15 (first read 06:23:00) "
        "read 12.5 min after"
    ]


def test_a_later_age_may_wait_for_its_windows_newest_minute(tmp_path: Path) -> None:
    """(5, 15): a 15-minute read joins runs whose first reads lie less than 5 minutes apart
    (a poll's jitter can fit 6 minutes in), so it may wait up to 5 minutes and two poll ticks
    for the newest (seeds 3029, 3053, 3055 held it to 4); 30 s more is late."""
    assert _ages_read(tmp_path, 5, 20.75) == []
    (tmp_path / "later").mkdir()
    assert _ages_read(tmp_path / "later", 5, 21.25) == [
        "late settle read: 2 reads, e.g. acc1 totals 06:20:00 age 15 (first read 06:23:00) "
        "read 21.2 min after"
    ]


HIT_BYTES = ("cdnvideo_account_edge_hit_bytes_total", (("account", "acc1"),))


def _settled_minute(tmp_path: Path) -> tuple[Checker, int, list[Any]]:
    """A checker whose minute 06:03 was read (both halves) at 06:05, 06:10 and 06:20 (its
    ages of (5, 15)); the minute and its rows on the platform."""
    checker = _checker(tmp_path)
    m = T0 + 3 * MINUTE
    for at in (5, 10, 20):
        _read(checker, T0 + at * MINUTE, m)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    return checker, m, list(traffic.traffic.rows(m))


def _family_at_end(tmp_path: Path, off: float) -> list[str]:
    """Minute 06:03 read at 06:05, 06:10 and 06:20 (settled, (5, 15)); at the end the
    account's edge hit bytes show what the reads show plus ``off``."""
    checker, m, rows = _settled_minute(tmp_path)
    col = COLUMN_KEYS.index("edge_hit_bytes")
    shown = checker._visible(m, [row[col] for row in rows], T0 + 20 * MINUTE)
    assert shown > 0
    end = T0 + 30 * MINUTE
    checker.scrape(end, {HIT_BYTES[0]: {HIT_BYTES: shown + off}})
    return [v.detail for v in checker.finish(end) if v.kind == "miscounted"]


def test_every_counted_family_is_held_to_the_platform(tmp_path: Path) -> None:
    """Not the request counters only: hit bytes (and every code, class and side) too."""
    assert _family_at_end(tmp_path, 0.0) == []
    (tmp_path / "off").mkdir()
    found = _family_at_end(tmp_path / "off", 7.0)
    assert len(found) == 1
    assert found[0].startswith('cdnvideo_account_edge_hit_bytes_total{account="acc1"} ')
    assert found[0].endswith("(+7)")


EDGE_BYTES = (
    "cdnvideo_account_transferred_bytes_total",
    (("account", "acc1"), ("side", "edge")),
)


def _bytes_at_end(tmp_path: Path, off: float) -> list[str]:
    """Minute 06:03 read (both halves) at 06:05, 06:10 and 06:20; at the end the account's
    edge bytes show the minute's bandwidth x 60 / 8 as visible at its last read, plus ``off``."""
    tmp_path.mkdir()
    checker, m, rows = _settled_minute(tmp_path)
    col = COLUMN_KEYS.index("edge_bandwidth")
    shown = checker._visible(m, [row[col] for row in rows], T0 + 20 * MINUTE, rate=True)
    fraction = checker._fraction(m, T0 + 20 * MINUTE)
    assert shown == pytest.approx(sum(row[col] for row in rows) * fraction * 60 / 8)
    assert shown > 1000
    end = T0 + 30 * MINUTE
    checker.scrape(end, {EDGE_BYTES[0]: {EDGE_BYTES: shown + off}})
    return [v.detail for v in checker.finish(end) if v.kind == "miscounted"]


def test_transferred_bytes_are_held_to_the_bandwidth_read(tmp_path: Path) -> None:
    """Bytes from the bandwidth of each minute's last read, within a read's rounding to the
    byte per resource (3 rows: 1.5 bytes), not a byte a resource more."""
    assert _bytes_at_end(tmp_path / "a", 0.0) == []
    assert _bytes_at_end(tmp_path / "b", -1.4) == []
    found = _bytes_at_end(tmp_path / "c", 2.0 * 3)
    assert len(found) == 1
    assert found[0].startswith(
        'cdnvideo_account_transferred_bytes_total{account="acc1",side="edge"} '
    )


def _written_at_end(
    tmp_path: Path,
    off: float,
    minutes: tuple[int, ...],
    read_after: bool = False,
    accepted_at: float | None = None,
) -> tuple[list[str], int]:
    """Minutes 06:03 and 06:04 read (both halves) at each age of (5, 15), on a day with remote
    write; the receiver got the account's edge requests of ``minutes`` (0: 06:03, 1: 06:04,
    2: 06:05, never read), each at 06:03's last read plus ``off``, at 06:22 (with
    ``read_after``, 06:03 is read again at 06:25, as a daemon restarted before it saved the
    write would; with ``accepted_at``, the receiver refused the body at 06:22 and took the same
    bytes then). What the checker finds of remote write, and 06:03's figure."""
    checker, m, rows = _settled_minute(tmp_path)
    for at in (6, 11, 21):
        _read(checker, T0 + at * MINUTE, m + MINUTE)
    if read_after:
        _read(checker, T0 + 25 * MINUTE, m)
    checker.s = replace(checker.s, remote_write=True)
    shown = checker._visible(m, [row[EDGE_REQ] for row in rows], T0 + 20 * MINUTE)
    assert shown > 0
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    labels = (("__name__", "cdnvideo_minute_account_requests"), ("account", "acc1"))
    for i in minutes:
        value = (
            shown
            if i != 1
            else checker._visible(
                m + MINUTE,
                [row[EDGE_REQ] for row in traffic.traffic.rows(m + MINUTE)],
                T0 + 21 * MINUTE,
            )
        )
        series = Series((*labels, ("side", "edge")), value + off, (m + i * MINUTE) * 1000)
        body = encode([series])
        if accepted_at is None:
            checker.transport.written.append((T0 + 22 * MINUTE, body))
        else:
            checker.transport.refused_writes.append((T0 + 22 * MINUTE, body))
            checker.transport.written.append((accepted_at, body))
    found = [
        f"{v.kind}: {v.detail}" for v in checker.finish(T0 + 30 * MINUTE) if "remote" in v.kind
    ]
    return found, int(shown)


def test_minutes_written_at_their_last_read_hold(tmp_path: Path) -> None:
    assert _written_at_end(tmp_path, 0.0, (0, 1))[0] == []


def test_a_minute_written_off_its_last_read_fails(tmp_path: Path) -> None:
    found, shown = _written_at_end(tmp_path, 5.0, (0,))
    assert found[0] == (
        'remote write off: cdnvideo_minute_account_requests{account="acc1",side="edge"} '
        f"06:03:00-06:04:00 written {shown + 5}, its last read at 06:20:00 shows {shown}"
    )


def test_a_minute_read_again_after_it_was_written_is_held_to_the_read_before(
    tmp_path: Path,
) -> None:
    """docs/remote-write.md: a run settled again after a restart keeps the first body."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _written_at_end(tmp_path / "a", 0.0, (0, 1), read_after=True)[0] == []
    found, shown = _written_at_end(tmp_path / "b", 3.0, (0,), read_after=True)
    assert found[0] == (
        'remote write off: cdnvideo_minute_account_requests{account="acc1",side="edge"} '
        f"06:03:00-06:04:00 written {shown + 3}, its last read at 06:20:00 shows {shown}"
    )


def _resource_written(tmp_path: Path, off: float) -> tuple[list[str], int]:
    """Minute 06:03 settled as ``_settled_minute``; the receiver got its first resource's edge
    requests at the last read's figure plus ``off``, and nothing of the account's totals."""
    tmp_path.mkdir()
    checker, m, rows = _settled_minute(tmp_path)
    checker.s = replace(checker.s, remote_write=True)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    rid = traffic.traffic.resources[0].id
    shown = checker._visible(m, [rows[0][EDGE_REQ]], T0 + 20 * MINUTE)
    assert shown > 0
    labels = (
        ("__name__", "cdnvideo_minute_resource_requests"),
        ("account", "acc1"),
        ("resource", rid),
        ("side", "edge"),
    )
    other = (("__name__", "cdnvideo_minute_resource_requests"), ("account", "acc1"))
    series = [
        Series(labels, shown + off, m * 1000),
        Series((*other, ("resource", "__other__"), ("side", "edge")), 1e9, m * 1000),
    ]
    checker.transport.written.append((T0 + 22 * MINUTE, encode(series)))
    found = [
        f"{v.kind}: {v.detail}" for v in checker.finish(T0 + 30 * MINUTE) if "remote" in v.kind
    ]
    return found, int(shown)


def test_a_resource_written_at_its_last_read_holds_and_off_it_fails(tmp_path: Path) -> None:
    assert _resource_written(tmp_path / "a", 0.0)[0] == []
    found, shown = _resource_written(tmp_path / "b", -2.0)
    assert len(found) == 1
    assert found[0].startswith("remote write off: cdnvideo_minute_resource_requests{")
    assert found[0].endswith(
        f"06:03:00-06:04:00 written {shown - 2}, its last read at 06:20:00 shows {shown}"
    )


def test_a_minute_never_read_but_written_fails(tmp_path: Path) -> None:
    found, _ = _written_at_end(tmp_path, 0.0, (0, 1, 2))
    assert found == ["remote write off: acc1 minute 06:05:00 written, never read"]


def test_a_minute_read_at_every_age_and_not_written_fails(tmp_path: Path) -> None:
    found, _ = _written_at_end(tmp_path, 0.0, (0,))
    assert found == [
        "remote write missing: acc1: 1 minutes read at every age (first 06:04:00) not written, "
        "0 named"
    ]


def _remote_found(checker: Checker, m: int, rows: list[Any]) -> list[str]:
    """06:03 (``m``) written at 06:22 as its read at 06:20 shows it; what the checker finds
    of remote write at 06:30."""
    shown = checker._visible(m, [row[EDGE_REQ] for row in rows], T0 + 20 * MINUTE)
    labels = (
        ("__name__", "cdnvideo_minute_account_requests"),
        ("account", "acc1"),
        ("side", "edge"),
    )
    checker.transport.written.append((T0 + 22 * MINUTE, encode([Series(labels, shown, m * 1000)])))
    return [f"{v.kind}: {v.detail}" for v in checker.finish(T0 + 30 * MINUTE) if "remote" in v.kind]


def _half_first(tmp_path: Path, last_age: bool) -> list[str]:
    """06:03 settled and written as ``_settled_minute``; 06:04's first fetch at 06:06 answered
    its totals alone (the per-resource half a 200 without data: quirk ``rate-limit-200``), both
    halves at 06:07 (its first read: nothing is counted from half of one) and at 06:12 (age 5),
    and at 06:22 (age 15) with ``last_age``; 06:04 never written. What the checker finds of
    remote write at 06:30."""
    tmp_path.mkdir()
    checker, m, rows = _settled_minute(tmp_path)
    checker.s = replace(checker.s, remote_write=True)
    nxt = m + MINUTE
    checker.transport.reads += [
        Read(T0 + 6 * MINUTE, "acc1", nxt, nxt + MINUTE, False, 200, True),
        Read(T0 + 6 * MINUTE, "acc1", nxt, nxt + MINUTE, True, 200, False),
    ]
    for at in (7, 12, 22) if last_age else (7, 12):
        _read(checker, T0 + at * MINUTE, nxt)
    return _remote_found(checker, m, rows)


def test_a_half_answered_alone_before_a_first_read_is_no_read_at_an_age(tmp_path: Path) -> None:
    """Seed 1038: a first fetch whose per-resource half the rate limit refused counts nothing
    (docs/windowing.md, *Halves owed separately*); the minute's first read is the fetch that
    answered both, its ages counted from there. Unwritten, it is owed its age-15 read, not
    missing from remote write; read at that age too, it is missing."""
    assert _half_first(tmp_path / "a", last_age=False) == []
    assert _half_first(tmp_path / "b", last_age=True) == [
        "remote write missing: acc1: 1 minutes read at every age (first 06:04:00) not written, "
        "0 named"
    ]


def _last_age_half(tmp_path: Path, answered: bool) -> list[str]:
    """06:03 settled and written as ``_settled_minute``; 06:04 read (both halves) at 06:07
    and 06:12 (age 5), at 06:22 (age 15) its totals, and its per-resource half a 429 (the
    platform's limit, met by two replicas) unless ``answered``; 06:04 never written. What
    the checker finds of remote write at 06:30."""
    tmp_path.mkdir()
    checker, m, rows = _settled_minute(tmp_path)
    checker.s = replace(checker.s, remote_write=True)
    nxt = m + MINUTE
    for at in (7, 12):
        _read(checker, T0 + at * MINUTE, nxt)
    checker.transport.reads += [
        Read(T0 + 22 * MINUTE, "acc1", nxt, nxt + MINUTE, False, 200, True),
        Read(T0 + 22 * MINUTE, "acc1", nxt, nxt + MINUTE, True, 200 if answered else 429, answered),
    ]
    return _remote_found(checker, m, rows)


def test_a_minute_whose_last_age_read_one_half_alone_is_not_missing(tmp_path: Path) -> None:
    """A minute is read at an age once both halves are (docs/windowing.md, *Halves owed
    separately*): its per-resource half refused at its last age, it is owed that half, not
    missing from remote write; both answered, it is missing."""
    assert _last_age_half(tmp_path / "a", answered=False) == []
    assert _last_age_half(tmp_path / "b", answered=True) == [
        "remote write missing: acc1: 1 minutes read at every age (first 06:04:00) not written, "
        "0 named"
    ]


def _sums_at_end(tmp_path: Path, other_off: float) -> list[str]:
    """Minute 06:03 read (both halves) at 06:05, 06:10 and 06:20; at the end the account's
    edge requests as the reads show them, its first resource's too, and ``__other__``
    holding the rest plus ``other_off`` (the resources a top N folds)."""
    checker, m, rows = _settled_minute(tmp_path)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    ids = [r.id for r in traffic.traffic.resources]
    assert len(ids) > 1
    at = T0 + 20 * MINUTE
    each = [checker._visible(m, [row[EDGE_REQ]], at) for row in rows]
    whole = checker._visible(m, [row[EDGE_REQ] for row in rows], at)
    account = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))
    end = T0 + 30 * MINUTE
    checker.scrape(
        end,
        {
            account[0]: {account: whole},
            RESOURCE_REQUESTS: {
                _series(ids[0]): each[0],
                _series("__other__"): sum(each[1:]) + other_off,
            },
        },
    )
    return [v.detail for v in checker.finish(end) if v.kind == "resources off the account"]


def test_resources_and_other_sum_to_the_account(tmp_path: Path) -> None:
    assert _sums_at_end(tmp_path, 0.0) == []


def test_resources_and_other_off_the_account_fail(tmp_path: Path) -> None:
    """Issue 48 failure 3 (b): a resource's late data lost, the resources short of the
    account."""
    found = _sums_at_end(tmp_path, -5.0)
    assert len(found) == 1
    assert found[0].startswith('cdnvideo_account_requests_total{account="acc1",side="edge"} ')
    assert found[0].endswith("the reads made put the difference at 0")


def _retired_at_end(tmp_path: Path, end_minute: int, other_off: float = 0.0) -> list[str]:
    """Retention 30 minutes, ``max_resources: 1``: minute 06:03 read (both halves) at 06:05,
    06:10 and 06:20, shown at 06:21 by the account, its top resource (100003, the most edge
    bandwidth in this scenario's model) and ``__other__``; at ``end_minute`` the top
    resource's series is gone (removed by the retention, or too early) and ``__other__`` shows
    its value plus ``other_off``. The findings of the sums and of the series kept."""
    daemon = Daemon(revisit=(5, 15), max_resources=1, retention_hours=0.5)
    checker = _checker(tmp_path, daemon)
    m = T0 + 3 * MINUTE
    for at in (5, 10, 20):
        _read(checker, T0 + at * MINUTE, m)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    ids = [r.id for r in traffic.traffic.resources]
    top = ids.index("100003")
    rows = traffic.traffic.rows(m)
    at = T0 + 20 * MINUTE
    each = [checker._visible(m, [row[EDGE_REQ]], at) for row in rows]
    rest = sum(each) - each[top]
    account = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))
    whole = {account: checker._visible(m, [row[EDGE_REQ] for row in rows], at)}
    other = {_series("__other__"): rest}
    checker.scrape(
        T0 + 21 * MINUTE,
        {account[0]: whole, RESOURCE_REQUESTS: {_series(ids[top]): each[top], **other}},
    )
    end = T0 + end_minute * MINUTE
    other = {_series("__other__"): rest + other_off}
    checker.scrape(end, {account[0]: whole, RESOURCE_REQUESTS: other})
    kinds = ("resources off the account", "series vanished")
    return [v.kind for v in checker.finish(end) if v.kind in kinds]


def test_a_series_counting_nothing_longer_than_the_retention_may_go(tmp_path: Path) -> None:
    """Seed 1043: a resource out of the top max_resources (or out of the replies) longer
    than series_retention_hours loses its series; what it counted leaves the sum of the
    resource series with it, the account keeps it."""
    assert _retired_at_end(tmp_path, 60) == []


def test_a_series_gone_within_the_retention_fails(tmp_path: Path) -> None:
    assert _retired_at_end(tmp_path, 40) == ["resources off the account", "series vanished"]


def test_resources_off_the_account_beside_a_series_gone_by_retention_fail(
    tmp_path: Path,
) -> None:
    assert _retired_at_end(tmp_path, 60, other_off=-5.0) == ["resources off the account"]


def test_settle_reads_switched_off_leave_what_is_owed_owed(tmp_path: Path) -> None:
    """(5, 15) switched off (0) across a restart: the minutes first read before it and never
    read at their ages are still owed (issue 48 failure 1: the gauge said 0)."""
    checker = _checker(tmp_path)
    end = _first_reads(checker, 30)
    checker.stopped(T0 + 33 * MINUTE)
    checker.started(T0 + 33 * MINUTE, Daemon(revisit=0))
    assert _owed_at_end(checker, 0, end) == [
        "acc1: cdnvideo_traffic_windows_owed 0 at the end, the reads made leave 30 to 30 "
        "minutes owed a settle read"
    ]


def _dropped(tmp_path: Path, deleted_shows: str) -> list[str]:
    """Quirk drop-deleted-resources, late data for 900 s: minute 06:03 read (both halves) at
    06:05, 06:10 and 06:20 (its ages 5 and 15: settled); resource 0 deleted at 06:07, so the
    later replies leave it out. At the end the account shows the last read, the other
    resources the 06:20 read, and resource 0 (``deleted_shows``) its 06:05 read ("held"), or
    the 06:20 figure ("all": its late data put back from the totals at the run's last read).
    The findings of both rules."""
    base = draw(3, 120)
    scenario = replace(
        base,
        accounts=("acc1",),
        daemon=SCHEDULE,
        events=(),
        late_seconds=900.0,
        quirks=("drop-deleted-resources",),
    )
    checker = World(scenario, tmp_path).checker
    checker.started(T0, SCHEDULE)
    m = T0 + 3 * MINUTE
    first, second = T0 + 5 * MINUTE, T0 + 20 * MINUTE
    for at in (first, T0 + 10 * MINUTE, second):
        _read(checker, at, m)
    reader = checker.sim.traffic_reader("acc1")
    assert reader is not None
    ids = [r.id for r in reader.traffic.resources]
    reader.traffic.delete(ids[0], T0 + 7 * MINUTE)
    rows = reader.traffic.rows(m)
    each = [checker._visible(m, [row[EDGE_REQ]], second) for row in rows]
    held = checker._visible(m, [rows[0][EDGE_REQ]], first)
    assert each[0] > held  # late data the replies since 06:10 left out
    account = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))
    shown = {_series(i): v for i, v in zip(ids, each, strict=True)}
    if deleted_shows == "held":
        shown[_series(ids[0])] = held
    end = T0 + 30 * MINUTE
    checker.scrape(end, {account[0]: {account: sum(each)}, RESOURCE_REQUESTS: shown})
    kinds = ("miscounted", "resources off the account")
    return [v.kind for v in checker.finish(end) if v.kind in kinds]


def test_a_deleted_resources_hidden_late_data_lost_fails(tmp_path: Path) -> None:
    """Issue 48 failure 3 (b): the platform drops a deleted resource from its replies; what
    its last minutes gained after is the account's, and the resources no longer sum to it."""
    assert _dropped(tmp_path, "held") == ["resources off the account"]


def test_a_deleted_resources_late_data_put_back_holds(tmp_path: Path) -> None:
    assert _dropped(tmp_path, "all") == []


def test_minutes_first_read_with_settling_off_owe_nothing_later(tmp_path: Path) -> None:
    """Settling off (0), then (5, 15) from a restart on: the minutes first read before it
    were never owed a settle read (seed 1028 found the checker holding them owed)."""
    checker = _checker(tmp_path, Daemon(revisit=0))
    end = _first_reads(checker, 30)
    checker.stopped(T0 + 33 * MINUTE)
    checker.started(T0 + 33 * MINUTE, SCHEDULE)
    assert _owed_at_end(checker, 0, end) == []


def _audit_at_end(
    tmp_path: Path, differs: float, quirks: tuple[str, ...] = (), late: float = 0.0
) -> list[str]:
    """A day whose last scrape shows the audit's ``differs`` seconds for acc1 (its late data
    coming in for ``late`` seconds, its schedule ``SCHEDULE``)."""
    checker = _checker(tmp_path)
    checker.s = replace(checker.s, quirks=quirks, late_seconds=late)
    end = T0 + 60 * MINUTE
    audit = "cdnvideo_traffic_audit_seconds_total"
    samples = {
        (audit, (("account", "acc1"), ("result", "differs"))): differs,
        (audit, (("account", "acc1"), ("result", "equal"))): 3600.0,
    }
    checker.scrape(end, {audit: samples})
    return [v.detail for v in checker.finish(end) if v.kind == "audit false alarm"]


def test_an_audit_finding_a_difference_the_platform_never_made_fails(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    assert _audit_at_end(tmp_path / "a", 0.0) == []
    assert _audit_at_end(tmp_path / "b", 120.0) == [
        "acc1: 120 s of traffic audited as differing at 07:00:00"
    ]
    assert _audit_at_end(tmp_path / "c", 120.0, ("revise-after-settle",)) == []
    # late data for 2 hours: the last settle read comes before the figures are final, so the
    # audit rightly finds the minutes counted short
    (tmp_path / "d").mkdir()
    assert _audit_at_end(tmp_path / "d", 120.0, late=7200.0) == []


def test_a_runs_positive_gap_goes_to_other_and_a_negative_one_stays() -> None:
    """Per minute, the account's last read less its resources': a run's last read moves what
    its totals hold beyond its resources to ``__other__`` (a positive gap clipped to 0, over
    whatever minutes the run joins); a negative gap (resources read later than the totals)
    stays; a minute still owed keeps its gap."""
    acc: Key = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))
    gap = {(acc, 0): 5.0, (acc, 60): -3.0}
    assert _clipped(gap, set()) == {acc: (-3.0, 0.0)}
    assert _clipped(gap, {(acc, 0)}) == {acc: (-3.0, 2.0)}
    assert _clipped({(acc, 0): -4.0, (acc, 60): -3.0}, set()) == {acc: (-7.0, -7.0)}


def test_a_last_read_with_settling_off_settles_what_was_owed(tmp_path: Path) -> None:
    """(5, 15), then 0 across a restart: each run owed gets one last read and is forgotten
    (docs/windowing.md); (5, 15) again after another restart owes nothing for them (seed
    2001: the checker held them owed under the last schedule)."""
    checker = _checker(tmp_path)
    end = _first_reads(checker, 30)
    checker.stopped(T0 + 33 * MINUTE)
    checker.started(T0 + 33 * MINUTE, Daemon(revisit=0))
    for i in range(30):
        _read(checker, T0 + 34 * MINUTE, T0 + i * MINUTE)
    checker.stopped(T0 + 40 * MINUTE)
    checker.started(T0 + 40 * MINUTE, SCHEDULE)
    assert _owed_at_end(checker, 0, end) == []


def test_a_run_owes_no_resource_half_once_per_resource_is_off(tmp_path: Path) -> None:
    """Both halves first read under (5, 15), then ``per_resource: false`` from a restart on:
    the totals read at each age settle the minutes (seed 2001: the checker held the resource
    half owed)."""
    checker = _checker(tmp_path)
    end = _first_reads(checker, 30)
    checker.stopped(T0 + 33 * MINUTE)
    checker.started(T0 + 33 * MINUTE, Daemon(revisit=(5, 15), per_resource=False))
    for i in range(30):
        first = T0 + (i + 1) * MINUTE + 120
        for age in (5, 15):
            at = first + age * MINUTE
            start = int(T0 + i * MINUTE)
            checker.transport.reads.append(
                Read(at, "acc1", start, start + MINUTE, False, 200, True)
            )
    assert _owed_at_end(checker, 0, end) == []


def _away(tmp_path: Path, minutes: int) -> list[str]:
    """acc1 out of the list from 06:10 for ``minutes`` with a retention of 30 minutes; the
    minutes read before it left and from its return on, none in between: the findings of
    ``silent minutes``."""
    back = 10 + minutes
    events = (
        Event(10 * MINUTE, "unlist", (("account", "acc1"),)),
        Event(back * MINUTE, "relist", (("account", "acc1"),)),
    )
    daemon = Daemon(revisit=0, retention_hours=0.5)
    scenario = replace(draw(3, 120), accounts=("acc1",), daemon=daemon, events=events, quirks=())
    checker = World(scenario, tmp_path).checker
    checker.started(T0, daemon)
    for i in [*range(0, 7), *range(back, back + 10)]:
        _read(checker, T0 + (i + 3) * MINUTE, T0 + i * MINUTE)
    end = T0 + (back + 20) * MINUTE
    checker.scrape(end, {})
    return [v.detail for v in checker.finish(end) if v.kind == "silent minutes"]


def test_an_account_back_after_its_ledger_was_dropped_owes_no_minute_away(
    tmp_path: Path,
) -> None:
    """Away 40 minutes, longer than the retention: its ledger is gone, it starts afresh, the
    minutes away are no one's (seed 3021: the checker called them silent)."""
    assert _away(tmp_path, 40) == []


def test_an_account_back_within_the_retention_owes_the_minutes_away(tmp_path: Path) -> None:
    assert _away(tmp_path, 20) == ["acc1: 23 minutes (first 06:07:00) never read, 0 named missed"]


def _lengthened(tmp_path: Path, read_at_60: bool, down_at: int | None) -> list[str]:
    """Late data for 30 minutes; minute 06:03 first read at 06:05 under (2, 10, 30) and at
    its ages 2 and 10; at 06:18 a restart to (5, 60, 1440) (the run waits for age 60, the
    first above 10); ``read_at_60``: read then; ``down_at``: the daemon stopped then for the
    rest of the day. The findings of ``not final``."""
    first = Daemon(revisit=(2, 10, 30))
    scenario = replace(
        draw(3, 120), accounts=("acc1",), daemon=first, events=(), quirks=(), late_seconds=1800.0
    )
    where = tmp_path / f"{read_at_60}-{down_at}"
    where.mkdir()
    checker = World(scenario, where).checker
    checker.started(T0, first)
    m = T0 + 3 * MINUTE
    for at in (5, 7, 15):
        _read(checker, T0 + at * MINUTE, m)
    checker.stopped(T0 + 18 * MINUTE)
    checker.started(T0 + 18 * MINUTE, Daemon(revisit=(5, 60, 1440)))
    if read_at_60:
        _read(checker, T0 + 65 * MINUTE, m)
    end = T0 + 120 * MINUTE
    if down_at is not None:
        checker.stopped(T0 + down_at * MINUTE)
    checker.scrape(end, {})
    return [v.detail for v in checker.finish(end) if v.kind == "not final"]


def test_a_lengthened_schedule_reads_a_run_final_at_its_own_ages(tmp_path: Path) -> None:
    """Seed 3024: the checker held the run to the old schedule's last age (30), which the
    new schedule no longer reads; the day ended before its age 60."""
    assert _lengthened(tmp_path, read_at_60=False, down_at=52) == []
    assert _lengthened(tmp_path, read_at_60=True, down_at=None) == []


def test_a_lengthened_schedule_that_skips_its_final_read_fails(tmp_path: Path) -> None:
    assert len(_lengthened(tmp_path, read_at_60=False, down_at=None)) == 1


def _forgotten_read(tmp_path: Path, base_read: int) -> list[str]:
    """Minute 06:03 of resource 100001 read at 06:05; the state volume unwritable from 06:10,
    the minute read again at 06:12, the daemon stopped at 06:15 before saves worked again
    (writable at 06:20): its next start at 06:25 does not remember the 06:12 read. Its series
    shown again at 0 then, the minute read at 06:26: at the end the series shows that read
    less the one at ``base_read`` (minutes past 06:00). The findings of ``miscounted``."""
    checker = _checker(tmp_path)
    m = T0 + 3 * MINUTE
    _read(checker, T0 + 5 * MINUTE, m)
    checker.scrape(T0 + 5 * MINUTE + 30, {RESOURCE_REQUESTS: {_series("100001"): 1.0}})
    checker.event(T0 + 10 * MINUTE, Event(10 * MINUTE, "unwritable"))
    _read(checker, T0 + 12 * MINUTE, m)
    checker.stopped(T0 + 15 * MINUTE)
    checker.event(T0 + 20 * MINUTE, Event(20 * MINUTE, "writable"))
    checker.started(T0 + 25 * MINUTE, SCHEDULE)
    checker.scrape(T0 + 25 * MINUTE + 30, {RESOURCE_REQUESTS: {_series("100001"): 0.0}})
    _read(checker, T0 + 26 * MINUTE, m)
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    row = traffic.traffic.rows(m)[0][EDGE_REQ]
    shown = _scaled(row, checker._fraction(m, T0 + 26 * MINUTE)) - _scaled(
        row, checker._fraction(m, T0 + base_read * MINUTE)
    )
    assert shown > 0
    end = T0 + 40 * MINUTE
    checker.scrape(end, {RESOURCE_REQUESTS: {_series("100001"): float(shown)}})
    return [v.detail for v in checker.finish(end) if v.kind == "miscounted"]


def test_a_series_shown_again_at_0_counts_from_the_read_the_daemon_remembers(
    tmp_path: Path,
) -> None:
    """Seed 3047: the checker took the read made while saves failed, which the restart
    forgot, as the one the series' count starts from."""
    assert _forgotten_read(tmp_path, base_read=5) == []


def test_a_series_shown_again_at_0_counting_from_a_forgotten_read_fails(tmp_path: Path) -> None:
    assert len(_forgotten_read(tmp_path, base_read=12)) == 1


def test_a_rename_takes_a_resource_out_of_the_filter_from_its_minute_on(tmp_path: Path) -> None:
    """``resources_exclude: '2$'`` matches the name a reply gives at each read: a resource
    renamed to end in 2 at 06:40 counts nothing from then on (seed 5872: the checker held
    its series to every read)."""
    daemon = Daemon(revisit=(5, 15), resources_exclude="2$")
    checker = _checker(tmp_path, daemon)
    reader = checker.sim.traffic_reader("acc1")
    assert reader is not None
    rid = reader.traffic.resources[0].id
    assert not rid.endswith("2")
    checker.sim.churn_log.append(Change(int(T0 + 40 * MINUTE), "acc1", "rename", rid, "www~2"))
    times = [T0 + 30 * MINUTE, T0 + 39 * MINUTE, T0 + 41 * MINUTE]
    assert checker._let_through("acc1", rid, times) == times[:2]
    kept = times[:2]
    assert checker._let_through("acc1", rid, kept) is kept  # all let through: the same list


def test_a_bytes_series_rising_by_twice_its_figures_jumps(tmp_path: Path) -> None:
    """The bound of a rate's series (its bytes, rounded per figure: seed 1023 rose 1 byte
    above the exact sum, which the rounding allows) still catches a double count."""
    checker = _checker(tmp_path)
    since = T0 + 30 * MINUTE
    key = (
        "cdnvideo_resource_transferred_bytes_total",
        (("account", "acc1"), ("resource", "100001"), ("side", "edge")),
    )
    checker.scrape(since, {key[0]: {key: 0.0}})
    checker.transport.reads.append(Read(since + 5, "acc1", T0, T0 + 20 * MINUTE, True, 200, True))
    traffic = checker.sim.traffic_reader("acc1")
    assert traffic is not None
    now = since + 15
    col = COLUMN_KEYS.index("edge_bandwidth")
    whole = sum(
        traffic.traffic.rows(m)[0][col] * checker._fraction(m, now) * BYTES_PER_RATE_MINUTE
        for m in range(T0, T0 + 20 * MINUTE, MINUTE)
    )
    assert whole > 1e6
    checker.scrape(now, {key[0]: {key: float(round(2 * whole))}})
    assert [v.kind for v in checker.violations] == ["series jump"]


def _held_by_a_budget(tmp_path: Path, budget: int, owed: float, backlog: bool = True) -> list[str]:
    """(5, 15) under a request budget of ``budget``, scraped every 15 s: minute 06:20 first
    read at 06:23, its age 5 read 7 minutes late (06:35), the owed gauge at ``owed`` from
    its due time on, and before it too with a ``backlog`` (other minutes overdue already).
    The ``late settle read`` findings."""
    checker = _checker(tmp_path, Daemon(revisit=(5, 15), budget=budget))
    checker.s = replace(checker.s, scrape_seconds=15.0)
    m = T0 + 20 * MINUTE
    f = m + 3 * MINUTE
    _read(checker, f, m)
    for i in range(1, 4 * 15):
        at = f + i * 15
        gauge = owed if backlog or at > f + 5 * MINUTE else 0.0
        checker.scrape(at, {OWED: {(OWED, (("account", "acc1"),)): gauge}})
    _read(checker, f + 12 * MINUTE, m)
    _read(checker, f + 17 * MINUTE, m)
    return [v.detail for v in checker.finish(T0 + 60 * MINUTE) if v.kind == "late settle read"]


def test_a_read_a_budget_held_back_and_the_owed_gauge_named_is_not_late(tmp_path: Path) -> None:
    """Seeds 1014, 1018: a budget that affords the schedule catching a restart's backlog up
    holds settle reads back for half an hour; the owed gauge says so all along."""
    assert _held_by_a_budget(tmp_path, budget=8, owed=3) == []


def test_a_read_held_back_unnamed_or_without_a_limit_is_late(tmp_path: Path) -> None:
    late = ["2 reads, e.g. acc1 totals 06:20:00 age 5 (first read 06:23:00) read 12.0 min after"]
    for name in ("0", "none", "no-backlog"):
        (tmp_path / name).mkdir()
    assert _held_by_a_budget(tmp_path / "0", budget=8, owed=0) == late
    assert _held_by_a_budget(tmp_path / "none", budget=0, owed=3) == late
    # no backlog: a budget that affords the schedule reads in time (issue 48 failure 6)
    assert _held_by_a_budget(tmp_path / "no-backlog", budget=8, owed=3, backlog=False) == late


def _still_held_at_the_end(
    tmp_path: Path, budget: int, owed: float, backlog: bool = True
) -> list[str]:
    """(5, 15) under a request budget of ``budget``, scraped every 15 s to the end (07:00):
    minute 06:20 first read at 06:23 and not read again by the end, the owed gauge at
    ``owed`` from its first age's due time (06:28) on, and before it too with a ``backlog``
    (other minutes overdue already). The ``settle read missing`` findings."""
    checker = _checker(tmp_path, Daemon(revisit=(5, 15), budget=budget))
    checker.s = replace(checker.s, scrape_seconds=15.0)
    m = T0 + 20 * MINUTE
    f = m + 3 * MINUTE
    _read(checker, f, m)
    end = T0 + 60 * MINUTE
    at = f + 15
    while at <= end:
        gauge = owed if backlog or at > f + 5 * MINUTE else 0.0
        checker.scrape(at, {OWED: {(OWED, (("account", "acc1"),)): gauge}})
        at += 15
    return [v.detail for v in checker.finish(end) if v.kind == "settle read missing"]


def test_a_read_still_held_back_by_a_named_backlog_at_the_end_is_not_missing(
    tmp_path: Path,
) -> None:
    """Seed 1034: a budget of 7 that affords [3] on 1-minute replies (cost 4) catches 2 hours
    of an outage up at 3 minutes a minute; the settle reads of the minutes caught up wait
    behind the first reads and are still owed at the end, the owed gauge naming them all
    along: a late read not yet made, as the gauge at the end says."""
    assert _still_held_at_the_end(tmp_path, budget=8, owed=3) == []


def test_a_read_never_made_unnamed_or_without_a_limit_is_missing(tmp_path: Path) -> None:
    missing = ["2 reads, e.g. acc1 totals 06:20:00 age 5 (first read 06:23:00)"]
    for name in ("0", "none", "no-backlog"):
        (tmp_path / name).mkdir()
    assert _still_held_at_the_end(tmp_path / "0", budget=8, owed=0) == missing
    assert _still_held_at_the_end(tmp_path / "none", budget=0, owed=3) == missing
    # no backlog when it fell due: a budget that affords the schedule reads it in time
    assert _still_held_at_the_end(tmp_path / "no-backlog", budget=8, owed=3, backlog=False) == (
        missing
    )


def _folded_after_restart(
    tmp_path: Path, state: str | None, max_resources: int = 1, read: bool = False
) -> list[str]:
    """Two resource series shown; a restart (its state file ``state``: damaged, or intact)
    with ``max_resources``, after which one series is gone (``read``: after a first read of
    both halves of the minute 06:02). The ``series vanished`` findings."""
    checker = _checker(tmp_path, Daemon(revisit=(5, 15)))
    both = {RESOURCE_REQUESTS: {_series("100001"): 0.0, _series("100002"): 0.0}}
    checker.scrape(T0 + 60, both)
    at = T0 + 120
    args = (("mode", "clean"), ("down", 0)) + ((("state", state),) if state else ())
    checker.event(at, Event(120, "restart", args))
    checker.stopped(at)
    checker.started(at, Daemon(revisit=(5, 15), max_resources=max_resources))
    if read:
        _read(checker, at + 60, at)
    checker.scrape(at + 90, {RESOURCE_REQUESTS: {_series("100001"): 0.0}})
    return [v.kind for v in checker.finish(at + 90) if v.kind == "series vanished"]


def test_a_series_folded_after_a_state_file_was_lost_may_go(tmp_path: Path) -> None:
    """Seed 1011: counters start at 0 again after a state file ignored as a whole, and a
    resource max_resources folds since has no series of its own."""
    assert _folded_after_restart(tmp_path, "truncated") == []


def test_a_series_folded_after_a_restart_with_its_state_stays(tmp_path: Path) -> None:
    assert _folded_after_restart(tmp_path, None) == ["series vanished"]


def test_a_series_not_named_since_a_state_file_was_lost_may_go(tmp_path: Path) -> None:
    """Seed 1029: a start after a state file ignored as a whole has the series of the
    resources its replies name; one deleted before (its minutes dropped from the replies) has
    none."""
    assert _folded_after_restart(tmp_path, "truncated", max_resources=0) == []


def test_a_series_named_since_a_state_file_was_lost_stays(tmp_path: Path) -> None:
    found = _folded_after_restart(tmp_path, "truncated", max_resources=0, read=True)
    assert found == ["series vanished"]


def test_a_minute_the_receiver_refused_first_is_held_to_the_read_before_its_first_try(
    tmp_path: Path,
) -> None:
    """A receiver down from 06:22 to 06:40: the body first tried at 06:22 is resent with the
    same bytes; a read of the minute after the first try (a restart's, 06:25) is not what it
    holds."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    late = T0 + 40 * MINUTE
    assert _written_at_end(tmp_path / "a", 0.0, (0, 1), read_after=True, accepted_at=late)[0] == []
    found, shown = _written_at_end(tmp_path / "b", 3.0, (0,), read_after=True, accepted_at=late)
    assert found[0] == (
        'remote write off: cdnvideo_minute_account_requests{account="acc1",side="edge"} '
        f"06:03:00-06:04:00 written {shown + 3}, its last read at 06:20:00 shows {shown}"
    )


def _top_one_for_an_hour(tmp_path: Path, shown_at_end: str) -> list[str]:
    """Two resource series shown, their minutes first read as each closes; a restart at 06:10
    with ``max_resources: 1`` (retention half an hour), then an hour of first reads, after
    which only ``shown_at_end`` is shown. In this scenario's model 100003 carries the most edge
    bandwidth of the account's resources in every minute: it is the one named after the
    restart. The ``series vanished`` findings."""
    daemon = Daemon(revisit=(5,), retention_hours=0.5)
    checker = _checker(tmp_path, daemon)
    for i in range(8):
        _read(checker, T0 + (i + 1) * MINUTE + 60, T0 + i * MINUTE)
    both = {RESOURCE_REQUESTS: {_series("100001"): 0.0, _series("100003"): 0.0}}
    checker.scrape(T0 + 9 * MINUTE, both)
    at = T0 + 10 * MINUTE
    checker.event(at, Event(120, "restart", (("mode", "clean"), ("down", 0))))
    checker.stopped(at)
    checker.started(at, replace(daemon, max_resources=1))
    for i in range(8, 70):
        _read(checker, T0 + (i + 1) * MINUTE + 60, T0 + i * MINUTE)
    end = T0 + 72 * MINUTE
    checker.scrape(end, {RESOURCE_REQUESTS: {_series(shown_at_end): 0.0}})
    return [v.detail for v in checker.finish(end) if v.kind == "series vanished"]


def test_a_series_out_of_the_top_n_longer_than_retention_may_go(tmp_path: Path) -> None:
    """Seed 1042: a restart with ``max_resources: 1`` folds a resource into ``__other__``; its
    own series goes ``series_retention_hours`` after the last first read that named it."""
    assert _top_one_for_an_hour(tmp_path, "100003") == []


def test_the_series_of_the_top_n_stays(tmp_path: Path) -> None:
    assert _top_one_for_an_hour(tmp_path, "100001") == [
        '1 series, e.g. cdnvideo_resource_requests_total{account="acc1",resource="100003",'
        'side="edge"}'
    ]


def _revised_and_audited(tmp_path: Path, shown: float, settled_at: int = 26) -> list[str]:
    """Quirk revise-after-settle: minutes 06:05-06:10 read at 06:11, 06:16 and 06:00 +
    ``settled_at`` minutes; the platform revises 06:07 at 06:38; the audit re-reads the window
    at 07:40, and the last scrape shows ``shown`` seconds audited as differing. The ``audit
    off`` findings, and every finding's kind."""
    checker = _checker(tmp_path)
    checker.s = replace(checker.s, quirks=("revise-after-settle",))
    start = T0 + 5 * MINUTE
    for at in (11, 16, settled_at):
        _read(checker, T0 + at * MINUTE, start, 5)
    checker.transport.reads.append(
        Read(T0 + 100 * MINUTE, "acc1", start, start + 5 * MINUTE, False, 200, True, audit=True)
    )
    end = T0 + 105 * MINUTE
    audit = "cdnvideo_traffic_audit_seconds_total"
    samples = {(audit, (("account", "acc1"), ("result", "differs"))): shown}
    checker.scrape(end, {audit: samples})
    found = checker.finish(end)
    return [v.detail for v in found if v.kind == "audit off"]


def test_the_audit_finds_exactly_the_revision_the_platform_planted(tmp_path: Path) -> None:
    for name in ("found", "missed", "too-many", "read-after"):
        (tmp_path / name).mkdir()
    assert _revised_and_audited(tmp_path / "found", 300.0) == []
    missed = (
        "acc1: 0 s of traffic audited as differing, the platform revised 300 s of the "
        "windows audited after their last read"
    )
    assert _revised_and_audited(tmp_path / "missed", 0.0) == [missed]
    assert _revised_and_audited(tmp_path / "too-many", 600.0) == ["acc1: 600" + missed[7:]]
    # the last read came after the revision: it counted it, the audit finds nothing
    assert _revised_and_audited(tmp_path / "read-after", 300.0, settled_at=40) == [
        "acc1: 300 s of traffic audited as differing, the platform revised 0 s of the windows "
        "audited after their last read"
    ]


def test_the_platforms_figures_hold_its_revision_from_when_it_is_made(tmp_path: Path) -> None:
    """Quirk revise-after-settle: minute 06:07 of the account's first resource gains an edge
    request (a 200) at 06:38, 30 minutes after it closed; 06:08 is never revised."""
    checker = _checker(tmp_path)
    checker.s = replace(checker.s, quirks=("revise-after-settle",))
    m = T0 + 7 * MINUTE
    assert checker._visible(m, [10.0], m + 31 * MINUTE - 1, revised=True) == 10.0
    assert checker._visible(m, [10.0], m + 31 * MINUTE, revised=True) == 11.0
    assert checker._visible(m, [10.0], m + 31 * MINUTE) == 10.0  # another column or resource
    assert checker._visible(m + MINUTE, [10.0], m + 90 * MINUTE, revised=True) == 10.0


def _late_at_end(
    tmp_path: Path, late: list[float] | None = None, hit_bytes: list[float] | None = None
) -> list[str]:
    """Minute 06:00 of acc1 (late data for 10 minutes) read at 06:03, 06:08 and 06:18; the
    last scrape shows its edge requests and edge hit bytes as the last read does and their
    lateness counters at ``late`` and ``hit_bytes`` (by default: what the settle reads at
    ages 5 and 15 added). The ``lateness off`` findings."""
    checker = _checker(tmp_path)
    checker.s = replace(checker.s, late_seconds=600.0)
    for at in (3, 8, 18):
        _read(checker, T0 + at * MINUTE, T0)
    reader = checker.sim.traffic_reader("acc1")
    assert reader is not None
    rows = reader.traffic.rows(T0)
    samples: dict[str, dict[Key, float]] = {}
    for col, name, labels, family, added in (
        ("edge_requests_total", "requests_total", (("side", "edge"),), LATE, late),
        ("edge_hit_bytes", "edge_hit_bytes_total", (), LATE_HIT_BYTES, hit_bytes),
    ):
        values = [row[COLUMN_KEYS.index(col)] for row in rows]
        seen = [checker._visible(T0, values, T0 + at * MINUTE) for at in (3, 8, 18)]
        assert seen[0] < seen[1] < seen[2]  # the settle reads add late data
        if added is None:
            added = [seen[1] - seen[0], seen[2] - seen[1]]
        key = (f"cdnvideo_account_{name}", (("account", "acc1"), *labels))
        samples[key[0]] = {key: seen[2]}
        samples[family] = {
            (family, (("account", "acc1"), ("after_minutes", str(age)))): v
            for age, v in zip((5, 15), added, strict=True)
        }
    end = T0 + 30 * MINUTE
    checker.scrape(end, {name: dict.fromkeys(keys, 0.0) for name, keys in samples.items()})
    checker.scrape(end, samples)
    return [v.detail for v in checker.finish(end) if v.kind == "lateness off"]


def test_the_lateness_counters_hold_what_the_settle_reads_added(tmp_path: Path) -> None:
    for name in ("exact", "short", "new"):
        (tmp_path / name).mkdir()
    assert _late_at_end(tmp_path / "exact") == []
    found = _late_at_end(tmp_path / "short", [1.0, 1.0])
    assert len(found) == 1
    assert " less the lateness counters 2 is " in found[0]
    # a lateness series still held at 0 (new): the difference may only be larger
    late = _late_at_end(tmp_path / "new", [0.0, 0.0])
    assert late == []


def test_the_hit_bytes_lateness_counters_hold_what_the_settle_reads_added(
    tmp_path: Path,
) -> None:
    """``cdnvideo_traffic_late_hit_bytes_total`` is held as the edge requests' lateness
    counters are: the account's edge hit bytes less it is what the first reads showed."""
    for name in ("short", "new"):
        (tmp_path / name).mkdir()
    found = _late_at_end(tmp_path / "short", hit_bytes=[1.0, 1.0])
    assert len(found) == 1
    assert found[0].startswith("acc1: edge hit bytes ")
    assert " less the lateness counters 2 is " in found[0]
    # a lateness series still held at 0 (new): the difference may only be larger
    assert _late_at_end(tmp_path / "new", hit_bytes=[0.0, 0.0]) == []


def _other_written(tmp_path: Path, other: float) -> list[str]:
    """Minute 06:03 settled (read at 06:05, 06:10, 06:20), written at 06:22: the account's
    edge requests and each resource's as the last read shows them, and ``__other__`` at
    ``other``. What the checker finds of remote write."""
    checker, m, rows = _settled_minute(tmp_path)
    checker.s = replace(checker.s, remote_write=True)
    at = T0 + 20 * MINUTE
    reader = checker.sim.traffic_reader("acc1")
    assert reader is not None
    edge = [row[EDGE_REQ] for row in rows]
    series = [
        Series(
            (
                ("__name__", "cdnvideo_minute_account_requests"),
                ("account", "acc1"),
                ("side", "edge"),
            ),
            checker._visible(m, edge, at),
            m * 1000,
        )
    ]
    values = [checker._visible(m, [v], at) for v in edge] + [other]
    ids = [res.id for res in reader.traffic.resources] + ["__other__"]
    for rid, value in zip(ids, values, strict=True):
        labels = (
            ("__name__", "cdnvideo_minute_resource_requests"),
            ("account", "acc1"),
            ("resource", rid),
            ("side", "edge"),
        )
        series.append(Series(labels, value, m * 1000))
    checker.transport.written.append((T0 + 22 * MINUTE, encode(series)))
    return [f"{v.kind}: {v.detail}" for v in checker.finish(T0 + 30 * MINUTE) if "remote" in v.kind]


def test_a_minutes_resources_and_other_sum_to_its_account_sample(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _other_written(tmp_path / "a", 0.0) == []
    found = _other_written(tmp_path / "b", 5.0)
    assert len(found) == 1
    head = (
        'remote write off: cdnvideo_minute_account_requests{account="acc1",side="edge"} '
        "minute 06:03:00 written "
    )
    assert found[0].startswith(head)
    written = int(found[0][len(head) :].split(",")[0])
    assert found[0].endswith(f"its resources (__other__ included) {written + 5}")


def test_a_first_read_counts_once_both_halves_are_answered(tmp_path: Path) -> None:
    """Seed 1036: minute 06:00's totals answered at 06:03 beside a per-resource half that
    was not, both answered at 06:04 (a first read takes both halves or neither: the exporter
    counts the totals read again then); what the settle reads added is measured from there."""
    checker = _checker(tmp_path)
    checker.s = replace(checker.s, late_seconds=600.0)
    reads = checker.transport.reads
    reads.append(Read(T0 + 3 * MINUTE, "acc1", T0, T0 + MINUTE, False, 200, True))
    reads.append(Read(T0 + 3 * MINUTE, "acc1", T0, T0 + MINUTE, True, 200, False))
    for at in (4, 8, 18):
        _read(checker, T0 + at * MINUTE, T0)
    reader = checker.sim.traffic_reader("acc1")
    assert reader is not None
    edge = [row[COLUMN_KEYS.index("edge_requests_total")] for row in reader.traffic.rows(T0)]
    seen = {at: checker._visible(T0, edge, T0 + at * MINUTE) for at in (3, 4, 8, 18)}
    assert seen[3] < seen[4]
    key = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))
    end = T0 + 30 * MINUTE
    checker.scrape(end, {key[0]: {key: 0.0}})
    late = {
        (LATE, (("account", "acc1"), ("after_minutes", "5"))): seen[8] - seen[4],
        (LATE, (("account", "acc1"), ("after_minutes", "15"))): seen[18] - seen[8],
    }
    checker.scrape(end, {key[0]: {key: seen[18]}, LATE: late})
    assert [v.detail for v in checker.finish(end) if v.kind == "lateness off"] == []


def _first_read_unshown(tmp_path: Path, owed: float) -> list[str]:
    """Minute 06:00 first read at 06:03, owed its settle reads; the last scrape (06:04) shows
    its edge requests at 0 and the owed gauge at ``owed``. The ``lateness off`` findings."""
    checker = _checker(tmp_path)
    _read(checker, T0 + 3 * MINUTE, T0)
    key = ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge")))
    end = T0 + 4 * MINUTE
    late = {(LATE, (("account", "acc1"), ("after_minutes", "5"))): 0.0}
    checker.scrape(end, {key[0]: {key: 0.0}})
    checker.scrape(
        end, {key[0]: {key: 0.0}, LATE: late, OWED: {(OWED, (("account", "acc1"),)): owed}}
    )
    return [v.kind for v in checker.finish(end) if v.kind == "lateness off"]


def test_a_first_read_not_shown_yet_is_excused_while_the_owed_gauge_names_it(
    tmp_path: Path,
) -> None:
    """Seed 3012: as ``miscounted`` allows, a minute owed a read may lack what its last read
    adds while cdnvideo_traffic_windows_owed names minutes owed."""
    (tmp_path / "named").mkdir()
    (tmp_path / "unnamed").mkdir()
    assert _first_read_unshown(tmp_path / "named", 1.0) == []
    assert _first_read_unshown(tmp_path / "unnamed", 0.0) == ["lateness off"]
