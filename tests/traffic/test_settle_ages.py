"""Each minute is read at each age of the settle schedule: at the first age between the age and
twice it after its first read (a run gathers first reads less than the first age apart); at
each later age never before it (a joined run is due at the age after its NEWEST first read,
issue 48 failure 5: due after its oldest, its newer minutes were read early) and less than
``tolerance_minutes`` late (its older minutes). A backlog of settle reads after an outage holds
back no minute falling due behind it."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from exporter.simulator import SimConfig
from exporter.simulator.routes_traffic import parse_minute
from exporter.support.clock import FakeClock
from exporter.traffic.reply import Answer, MetricsEndpoint, TrafficSource
from exporter.traffic.skew import SKEW_TOLERANCE_SECONDS
from exporter.traffic.windows import tolerance_minutes
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    outage,
    rig,
)

POLL = 15


def totals_reads(r: Rig) -> dict[int, list[float]]:
    """Per minute, when each totals request that covered it was sent (the simulator's log)."""
    out: dict[int, list[float]] = defaultdict(list)
    for req in r.sim.requests:
        if req.area != "traffic" or req.path.rstrip("/").endswith("resources"):
            continue
        q = dict(req.query)
        for m in range(parse_minute("start", q["start"]), parse_minute("end", q["end"]), 60):
            out[m].append(req.time)
    return out


def assert_on_time(
    m: int, times: list[float], schedule: tuple[int, ...], aside: list[float] | None = None
) -> None:
    """The first read, then one read per age, each within its age's bounds; each read of the
    minute ``aside`` (set aside on a doubted clock) before it allows one poll more."""
    assert len(times) == 1 + len(schedule), (m, times)  # a first read + one per age
    for i, (age, at) in enumerate(zip(schedule, times[1:], strict=True)):
        late = at - times[0] - age * 60
        again = POLL * sum(1 for t in aside or () if times[i] < t < at)
        if i == 0:  # read with the newest minute of its run: never before its age
            assert 0 <= late < age * 60 + POLL + again, (m, age, late)
            continue
        assert late >= 0, (m, age, late)  # never before its own age
        # a joined run waits for its newest minute: older ones less than the tolerance late
        assert late < tolerance_minutes(age, schedule) * 60 + POLL + again, (m, age, late)


@pytest.mark.parametrize("schedule", [(1, 4), (2, 10, 25), (5, 15)])
async def test_each_minute_is_read_at_each_age_within_the_tolerance(
    aiohttp_server: ServerFactory, schedule: tuple[int, ...]
) -> None:
    config = SimConfig(late_seconds=180, resources_per_account=2)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(revisit_minutes=list(schedule))
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 70 * 60)
        reads = totals_reads(r)
        checked = 0
        # the minutes whose every age has passed, after the first few (the start is uneven)
        for m in range(first + 5 * 60, int(r.clock.time()) - (schedule[-1] + 12) * 60, 60):
            times = sorted(reads[m])
            assert_on_time(m, times, schedule)
            checked += 1
        assert checked >= 20


async def test_after_an_outage_the_backlog_holds_back_no_minute_due_behind_it(
    aiohttp_server: ServerFactory,
) -> None:
    """40 minutes of 504s with ``[1, 4]`` (windows shrink to 1 minute for a while): once the
    platform answers, every run owed is read in the polls after (not one a poll), so the
    minutes first read from then on are read at each age in the poll it falls due in."""
    schedule = (1, 4)
    config = SimConfig(late_seconds=180, resources_per_account=2)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(revisit_minutes=list(schedule))
        await r.drive(poller, 10 * 60)
        await outage(r, poller, 40 * 60, "504")  # the platform gives up on every window
        back = r.clock.time()
        await r.drive(poller, 30 * 60)
        reads = totals_reads(r)
        checked = 0
        for m in sorted(reads):
            times = sorted(reads[m])
            if times[0] < back + 60 or times[0] > r.clock.time() - 6 * 60:
                continue  # read before the outage ended, or its last age not passed yet
            assert_on_time(m, times, schedule)
            checked += 1
        assert checked >= 15
        assert r.windows("given_up") == 0


class Dated:
    """The client, passing every reply on as it is: which windows' replies carried a ``Date``
    the believed clock doubts (quirk bogus-date), per minute, and when."""

    def __init__(self, client: TrafficSource, clock: FakeClock) -> None:
        self.client, self.clock = client, clock
        self.doubted: dict[int, set[float]] = defaultdict(set)  # either half's reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def traffic(self, account: str, start: float, end: float, *args: Any) -> Answer:
        reply = await self.client.traffic(account, start, end, *args)
        if abs(reply.skew_seconds or 0.0) > SKEW_TOLERANCE_SECONDS:
            for m in range(int(start), int(end), 60):
                self.doubted[m].add(self.clock.time())
        return reply


async def test_a_read_set_aside_on_a_doubted_clock_holds_back_no_other_run(
    aiohttp_server: ServerFactory,
) -> None:
    """Quirk bogus-date (every 10th metrics reply's ``Date`` an hour ahead) with 1-minute
    windows and ``[1, 4]``, polls on the minute's ticks: each minute is read at each age in
    the poll it falls due in; a read whose reply doubts the clock is not applied and is made
    again at the next poll, and the other runs due in that poll are read all the same
    (simulation seed 5669: one run set aside held the runs due behind it back)."""
    schedule = (1, 4)
    config = SimConfig(
        late_seconds=180,
        resources_per_account=2,
        quirks=frozenset({"bogus-date", "one-minute-window"}),
    )
    async with rig(aiohttp_server, config) as r:
        dated = Dated(MetricsEndpoint(r.client), r.clock)
        r.source = dated
        poller = r.poller(revisit_minutes=list(schedule))
        await r.drive(poller, 70 * 60)
        reads = totals_reads(r)
        checked = 0
        for m in sorted(reads)[5:]:
            if reads[m][0] > r.clock.time() - 6 * 60:
                break  # its last age not passed yet
            aside = dated.doubted[m]
            times = sorted(reads[m])
            for t in aside:  # the reads applied: those without a doubted reply
                times.remove(t)
            assert len(times) == 1 + len(schedule), (m, times, aside)
            for i, age in enumerate(schedule):
                late = times[i + 1] - times[0] - age * 60
                again = sum(1 for t in aside if times[i] < t < times[i + 1])
                assert 0 <= late <= POLL * again, (m, age, late, aside)
            checked += 1
        assert checked >= 50
        assert sum(map(len, dated.doubted.values())) >= 10
