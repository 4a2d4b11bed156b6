"""A settle schedule against a simulator whose figures rise for 20 minutes (most in the first 2):
reaching past the lag gives the final truth exactly, across a restart in the middle of the
schedule; a shorter schedule shows what the last stage still adds."""

from __future__ import annotations

from pathlib import Path

from exporter.simulator import SimConfig
from exporter.traffic import TrafficPoller
from exporter.traffic.families import (
    LAST_STAGE_LATE_SHARE,
    LATE_REQUESTS,
    LATE_SHARE,
    SETTLED_LATE_SHARE,
)
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    assert_counters_equal_truth,
    counter,
    drain,
    rig,
    traffic_requests,
)

LATE = SimConfig(late_seconds=1200, late_half_seconds=60, resources_per_account=4)


async def settle_all(r: Rig, poller: TrafficPoller, state_file: str, schedule: list[int]) -> int:
    """Restart and drain every run through every stage; returns the cursor (unchanged)."""
    cursor = poller.accounts.ledger(ACC).cursor
    drained = await drain(r, state_file, revisit_minutes=schedule)
    assert drained.accounts.ledger(ACC).cursor == cursor
    assert cursor is not None
    return cursor


async def test_a_schedule_past_the_lag_gives_the_final_truth_across_a_restart(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    schedule = [2, 10, 25]
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, LATE) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=schedule)
        await r.drive(poller, 20 * 60)
        first = poller.accounts.ledger(ACC).cursor - 19 * 60  # type: ignore[operator]
        stages = {run.settled for run in poller.accounts.ledger(ACC).pending}
        assert stages == {0, 2, 10}  # runs wait for each age; none has had its 25-minute read
        # A restart from the state file in the middle of the schedule.
        poller = r.poller(state_file=state_file, revisit_minutes=schedule)
        assert {run.settled for run in poller.accounts.ledger(ACC).pending} == stages
        before = traffic_requests(r)
        await r.drive(poller, 20 * 60)
        spent = traffic_requests(r) - before
        # 20 minutes: 40 first-read requests, a 2-minute settle pair per 2 minutes (10 pairs)
        # at 2 and at 10 minutes (runs joined at 10 would read their oldest minutes more than
        # tolerance_minutes = 3 late), and 6 minutes per pair at 25 (about 3 pairs).
        assert 40 + 20 + 20 <= spent <= 40 + 20 + 20 + 10
        cursor = await settle_all(r, poller, state_file, schedule)
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0

        f = r.fragment()
        added = {m: f.value(LATE_REQUESTS, account=ACC, after_minutes=m) for m in ("2", "10")}
        assert added["2"] > added["10"] > 0  # type: ignore[operator]  # most arrives early
        # Past 12 minutes only the simulator's rounding is left (a request per minute or so).
        assert f.value(LATE_REQUESTS, account=ACC, after_minutes="25") < added["10"] / 10  # type: ignore[operator]
        last = f.value(LAST_STAGE_LATE_SHARE, account=ACC)
        assert last == f.value(LATE_SHARE, account=ACC, after_minutes="25")
        assert last is not None
        assert last < 0.0001  # well below the alert's 0.1%
        share = f.value(SETTLED_LATE_SHARE, account=ACC)
        assert share is not None
        assert 0.03 < share < 0.3  # first read at 2 minutes saw 70-97% of the final figures


async def test_a_short_schedule_shows_what_its_last_stage_still_adds(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, LATE) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[2])
        await r.drive(poller, 20 * 60)
        first = poller.accounts.ledger(ACC).cursor - 19 * 60  # type: ignore[operator]
        cursor = await settle_all(r, poller, state_file, [2])
        minutes = range(first, cursor + 60, 60)
        truth = sum(r.sim.traffic_final(ACC, m)["edge_requests_total"] for m in minutes)
        f = r.fragment()
        counted = counter(f, "edge_requests_total")
        assert counted is not None
        assert 0.005 * truth < truth - counted < 0.03 * truth  # missed: arrived after 4 min
        late = f.value(LAST_STAGE_LATE_SHARE, account=ACC)
        assert late is not None
        assert late > 0.01  # far above the alert's 0.1%: the figures were still rising
        added = f.value(LATE_REQUESTS, account=ACC, after_minutes="2")
        assert added is not None
        assert added > truth - counted  # the 2-minute stage caught most of the late data
