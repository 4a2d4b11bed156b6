"""The standing audit: settled windows kept, re-read when nothing else is owed, compared; a
revision the platform makes after the last settle read is found (quirk revise-after-settle)."""

from __future__ import annotations

import math
import random
from array import array
from pathlib import Path

from exporter.exposition import Store, StoreKey
from exporter.simulator import SimConfig
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.audit import DIFFERENCE, LAST, MINUTES, AuditBook, Policy
from exporter.traffic.auditor import HEADROOM, Auditor, audit_path
from exporter.traffic.parse import COUNT_INDEX, COUNT_KEYS, blank
from exporter.traffic.reply import Answer, MetricsEndpoint
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.windows import Window
from tests.traffic.test_against_simulator import ACC, T0, Rig, ServerFactory, rig

REQ = COUNT_INDEX["edge_requests_total"]
HOUR = 3600.0


def totals(requests: float) -> array[float]:
    v = blank()
    v[REQ] = requests
    return v


def test_counted_windows_are_kept_48_hours() -> None:
    book = AuditBook()
    book.settled(ACC, Window(0, 300), totals(5), now=1000.0)
    book.settled(ACC, Window(300, 600), totals(6), now=1000.0 + 47 * HOUR)
    assert len(book.account(ACC).counted) == 2
    book.settled(ACC, Window(600, 900), totals(7), now=1001.0 + 48 * HOUR)
    assert [c.start for c in book.account(ACC).counted] == [300, 600]


def test_a_sample_covers_60_minutes_of_windows_an_hour_past_their_settle_read() -> None:
    book = AuditBook(Policy(), random.Random(7))
    for i in range(30):  # 30 five-minute windows, settled one every 5 minutes
        book.settled(ACC, Window(i * 300, i * 300 + 300), totals(i), now=10_000.0 + i * 300)
    now = 10_000.0 + 29 * 300
    # the newest window was settled just now: only those settled an hour ago are eligible
    first = book.next_window(ACC, now)
    assert first is not None
    sample = book.account(ACC).sample
    assert sum(c.minutes for c in sample) == 60
    assert all(c.settled_at <= now - HOUR for c in sample)
    assert book.next_window(ACC, now + 60) is first  # the same audit goes on


def test_no_audit_before_60_minutes_are_eligible_then_all_of_them_when_asked() -> None:
    book = AuditBook()
    for i in range(11):
        book.settled(ACC, Window(i * 300, i * 300 + 300), totals(5), now=0.0)
    assert book.next_window(ACC, HOUR) is None
    assert book.next_window(ACC, HOUR, everything=True) is None
    book.settled(ACC, Window(3300, 3600), totals(5), now=0.0)
    book.settled(ACC, Window(3600, 3900), totals(5), now=0.0)
    picked = book.next_window(ACC, HOUR, everything=True)
    assert picked is not None
    assert picked.window == Window(0, 300)
    assert sum(c.minutes for c in book.account(ACC).sample) == 65


def test_comparing_counts_minutes_and_sums_platform_minus_counted() -> None:
    book = AuditBook(Policy(sample_minutes=10))
    book.settled(ACC, Window(0, 300), totals(5), now=0.0)
    book.settled(ACC, Window(300, 600), totals(6), now=0.0)
    one = book.next_window(ACC, HOUR, everything=True)
    assert one is not None
    assert book.compare(ACC, one, totals(5), HOUR)
    two = book.next_window(ACC, HOUR)
    assert two is not None
    assert two.start == 300
    assert not book.compare(ACC, two, totals(8), HOUR + 1)
    f = book.fragment(ACC)
    assert f.value(MINUTES, account=ACC, result="equal") == 5 * 60  # seconds of traffic
    assert f.value(MINUTES, account=ACC, result="differs") == 5 * 60
    assert f.value(DIFFERENCE, account=ACC, family="edge_requests_total") == 2
    assert f.value(DIFFERENCE, account=ACC, family="edge_hit_bytes") == 0
    assert f.value(LAST, account=ACC) == HOUR + 1
    assert book.next_window(ACC, HOUR + 2) is None  # the next audit is a day later


def test_the_record_survives_a_restart(tmp_path: Path) -> None:
    book = AuditBook(Policy(sample_minutes=10))
    book.settled(ACC, Window(0, 300), totals(5), now=0.0)
    book.settled(ACC, Window(300, 600), totals(6), now=0.0)
    one = book.next_window(ACC, HOUR, everything=True)
    assert one is not None
    book.compare(ACC, one, totals(9), HOUR)
    again = AuditBook()
    again.load_json(book.to_json())
    a = again.account(ACC)
    assert [c.window for c in a.counted] == [Window(0, 300), Window(300, 600)]
    assert [c.window for c in a.sample] == [Window(300, 600)]  # the audit under way goes on
    assert a.running is not None
    assert a.running.difference[REQ] == 4
    assert a.minutes == {"equal": 0, "differs": 5}
    assert math.isnan(a.counted[0].totals[COUNT_INDEX["edge_hit_bytes"]])


def audited_poller(r: Rig, state_file: str) -> tuple[TrafficPoller, Auditor]:
    auditor = Auditor(MetricsEndpoint(r.client), r.store, r.clock, audit_path(state_file))
    s = TrafficSettings(delay_seconds=120, revisit_minutes=5, state_file=state_file)
    poller = TrafficPoller(
        MetricsEndpoint(r.client), r.store, r.metrics, r.clock, s, auditor=auditor
    )
    return poller, auditor


async def drive_until_audited(r: Rig, poller: TrafficPoller, auditor: Auditor) -> None:
    """Poll every 15 s until the first audit of the account is complete (about 2 h 15 min:
    60 minutes of windows must be an hour past their settle reads)."""
    for _ in range(4 * 60 * 3):
        await poller.poll(ACC)
        r.clock.advance(15)
        a = auditor.book.accounts.get(ACC)
        if a is not None and a.last is not None:
            return
    raise AssertionError("no audit completed in 3 hours")


async def test_the_audit_reports_equal_when_nothing_changed_after_settling(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    config = SimConfig(late_seconds=240, resources_per_account=3)
    async with rig(aiohttp_server, config) as r:
        poller, auditor = audited_poller(r, str(tmp_path / "traffic.json"))
        await drive_until_audited(r, poller, auditor)
        last = auditor.book.accounts[ACC].last
        assert last is not None
        assert last.differs == 0
        assert last.equal >= 60  # every eligible window of the day (no budget limit)
        assert list(last.difference) == [0.0] * len(COUNT_KEYS)
        f = r.store.fragment(StoreKey("traffic_audit", ACC))
        assert f is not None
        assert f.value(MINUTES, account=ACC, result="equal") == last.equal * 60
        assert f.value(DIFFERENCE, account=ACC, family="edge_transferred_bytes") == 0


async def test_the_audit_finds_a_minute_revised_after_its_last_settle_read(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    config = SimConfig(
        late_seconds=240, resources_per_account=3, quirks=frozenset({"revise-after-settle"})
    )
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller, auditor = audited_poller(r, state_file)
        await drive_until_audited(r, poller, auditor)
        a = auditor.book.accounts[ACC]
        assert a.last is not None
        revised = sum(
            1
            for c in a.counted
            if c.settled_at <= a.last.at - HOUR
            for m in range(c.start, c.end, 60)
            if (m // 60) % 60 == 7
        )
        assert revised >= 1
        assert a.last.differs == 5 * revised  # 5-minute windows, one revised minute each
        f = r.store.fragment(StoreKey("traffic_audit", ACC))
        assert f is not None
        for key in COUNT_KEYS:
            want = (
                revised
                if key in ("edge_requests_total", "edge_status_200", "edge_status_2xx")
                else 0
            )
            assert f.value(DIFFERENCE, account=ACC, family=key) == want, key
        assert f.value(MINUTES, account=ACC, result="differs") == 5 * revised * 60
        assert f.value(LAST, account=ACC) == a.last.at
        # the counters keep what was settled: the audit reports, it does not recount
        assert r.clock.time() > T0 + 2 * HOUR
        auditor.save(force=True)
        restarted = Auditor(MetricsEndpoint(r.client), r.store, r.clock, audit_path(state_file))
        assert restarted.book.accounts[ACC].last == a.last


class Source:
    """The platform's totals, always 5 edge requests a window; the calls made."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float]] = []

    async def traffic(  # type: ignore[no-untyped-def]
        self, account, start, end, per_resource, metrics=(), resource=None
    ) -> Answer:
        self.calls.append((start, end))
        return Answer.of(
            {"start": "", "end": "", "account": account, "data": [{"edge_requests_total": 5}]}
        )


class Budget:
    """Affords ``room`` requests; no limit configured when ``room`` is None."""

    def __init__(self, room: int | None) -> None:
        self.room = room
        self.asked: list[int] = []

    def affords(self, account: str, area: str, count: int) -> bool:
        self.asked.append(count)
        return self.room is None or count <= self.room

    def limit(self, account: str) -> float | None:
        return None if self.room is None else 60.0


async def test_an_audit_read_leaves_room_for_the_next_traffic_reads() -> None:
    clock = FakeClock(2 * HOUR)
    for room, reads in ((HEADROOM, 0), (HEADROOM + 1, 1)):
        source, budget = Source(), Budget(room)
        auditor = Auditor(source, Store(clock), clock, "", budget)
        for i in range(13):
            auditor.settled(ACC, Window(i * 300, i * 300 + 300), totals(5))
        clock.advance(HOUR)
        await auditor.step(ACC, long_windows=True)
        assert budget.asked == [1 + HEADROOM]
        assert len(source.calls) == reads, room
