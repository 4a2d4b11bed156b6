"""Under a request budget, a catch-up spends all of it: the first reads go first, and a
settle read takes what they leave (docs/windowing.md, *Under limits*)."""

from __future__ import annotations

from pathlib import Path

from exporter.simulator import SimConfig
from tests.traffic.test_against_simulator import (
    ACC,
    ServerFactory,
    assert_counters_equal_truth,
    drain,
    rig,
)
from tests.traffic.test_limits import drive_failing

BUDGET = 5  # two first reads of a minute (2 requests each) a minute, and one request left


async def test_a_catch_up_under_a_budget_gives_what_first_reads_leave_to_settle_reads(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    config = SimConfig(
        late_seconds=120, resources_per_account=3, quirks=frozenset({"one-minute-window"})
    )
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config, budget=BUDGET) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[2], catch_up_minutes=60)
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 10 * 60)
        r.sim.faults.set("traffic", "503")  # an outage: nothing is read for half an hour
        await drive_failing(r, poller, 30 * 60)
        r.sim.faults.clear("traffic")
        back = r.clock.time()
        await r.drive(poller, 12 * 60)
        led = poller.accounts.ledger(ACC)
        assert led.cursor is not None
        assert led.cursor < r.clock.time() - 5 * 60  # the first reads are still behind
        sent = [q.time for q in r.sim.requests if q.area == "traffic" and q.time >= back]
        # every minute of the catch-up spends the whole budget: two first reads and a settle
        # half (the platform's figures are read no faster than the budget allows)
        per_minute = [
            sum(1 for t in sent if back + 60 * k <= t < back + 60 * (k + 1)) for k in range(12)
        ]
        assert per_minute == [BUDGET] * 12
        drained = await drain(r, state_file, revisit_minutes=[2])
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.windows("given_up") == 0
        assert r.windows("missed") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
