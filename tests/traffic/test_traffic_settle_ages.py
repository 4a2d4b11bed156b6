"""Each minute is read at each age of the settle schedule, never before it and at most
``tolerance_minutes`` after it (plus a poll): joining runs at a later age never postpones the
older minutes of the joined run past that."""

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
            assert len(times) == 1 + len(schedule), (m, times)  # a first read + one per age
            for age, at in zip(schedule, times[1:], strict=True):
                late = at - times[0] - age * 60
                assert late >= 0, (m, age, late)  # never before its age
                assert late < tolerance_minutes(age, schedule) * 60 + POLL, (m, age, late)
            checked += 1
        assert checked >= 20
