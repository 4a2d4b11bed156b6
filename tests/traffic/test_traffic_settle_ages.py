"""Each minute is read at each age of the settle schedule: at the first age between the age and
twice it after its first read (a run gathers first reads less than the first age apart); at
each later age no later than the poll it falls due in (a joined run is due at the age after its
OLDEST first read, issue 35 failure 6), and less than ``tolerance_minutes`` early (its newer
minutes). A backlog of settle reads after an outage holds back no minute falling due behind it."""

from __future__ import annotations

from collections import defaultdict

import pytest

from exporter.simulator import SimConfig
from exporter.simulator.routes_traffic import parse_minute
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


def assert_on_time(m: int, times: list[float], schedule: tuple[int, ...]) -> None:
    """The first read, then one read per age, each within its age's bounds."""
    assert len(times) == 1 + len(schedule), (m, times)  # a first read + one per age
    for i, (age, at) in enumerate(zip(schedule, times[1:], strict=True)):
        late = at - times[0] - age * 60
        if i == 0:  # read with the newest minute of its run: never before its age
            assert 0 <= late < age * 60 + POLL, (m, age, late)
            continue
        assert late <= POLL, (m, age, late)  # never past its own age (and its poll)
        assert late > -tolerance_minutes(age, schedule) * 60, (m, age, late)  # newer minutes


@pytest.mark.parametrize("schedule", [(1, 4), (2, 10, 25), (5, 15)])
async def test_each_minute_is_read_at_each_age_within_the_tolerance(
    aiohttp_server: ServerFactory, schedule: tuple[int, ...]
) -> None:
    config = SimConfig(late_seconds=180, resources_per_account=2)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(revisit_minutes=list(schedule))
        await poller.poll(ACC)
        first = poller.ledger(ACC).cursor
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
