"""Settle reads of a run longer than the platform answers (1-minute replies, 422 or 504 on long
windows) are read in pieces that are kept: under a request budget or the platform's limit of
6 a minute, counting goes on and every counter ends equal to the simulator's final figures.
And when the budget is below what such a platform really costs, first reads keep going."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.traffic import TrafficPoller
from exporter.traffic.policy import SLOW_HOLD_SECONDS
from exporter.upstream import UpstreamError
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    assert_counters_equal_truth,
    counter,
    drain,
    rig,
)
from tests.traffic.test_limits import drive_failing

HOURS = 3 * 3600
RESOURCES = 3


async def drive(r: Rig, poller: TrafficPoller, seconds: float) -> list[UpstreamError]:
    """Poll every 15 s; the polls that failed other than by the platform's rate limit."""
    return [e for e in await drive_failing(r, poller, seconds) if not e.rate_limited]


@pytest.mark.parametrize(
    ("quirk", "max_window", "budget", "limit"),
    [
        ("one-minute-window", 10, 0, 6),  # 200 with the last minute, the platform's limit
        ("one-minute-window", 10, 6, 6),  # ... and a budget of 6
        ("", 1, 6, 0),  # 422 on windows over a minute, a budget of 6
        ("slow-long-windows", 10, 4, 0),  # 504 on windows over 2 minutes: halved to 2
    ],
)
async def test_a_run_read_in_pieces_under_a_budget_or_a_limit_is_settled(
    aiohttp_server: ServerFactory,
    tmp_path: Path,
    quirk: str,
    max_window: int,
    budget: int,
    limit: int,
) -> None:
    config = SimConfig(
        late_seconds=240,
        resources_per_account=RESOURCES,
        max_window_minutes=max_window,
        api_requests_per_minute=limit,
        quirks=frozenset({quirk} - {""}),
    )
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config, budget=budget) as r:
        poller = r.poller(state_file=state_file)
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        failed = await drive(r, poller, HOURS)
        # Only the 504 of a long settle window, once an hour (when full windows are tried
        # again after SLOW_HOLD_SECONDS); it halves the window and fails its poll.
        assert all(exc.status == 504 for exc in failed), failed
        assert len(failed) <= HOURS / SLOW_HOLD_SECONDS
        led = poller.accounts.ledger(ACC)
        cursor = led.cursor
        assert cursor is not None
        # Every minute first-read as it became ready (none waits behind a settle read) ...
        assert cursor >= r.clock.time() - 60 - 120 - 60 - 60
        # ... and the settle reads keep up: only the runs of the last minutes are owed.
        assert sum(run.minutes for run in led.pending) <= 12
        drained = await drain(r, state_file)
        assert drained.accounts.ledger(ACC).cursor == cursor
        assert r.windows("given_up") == 0
        assert r.windows("missed") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0


def owed(r: Rig) -> tuple[float, float]:
    """The account's minutes owed and how long the most overdue settle read has waited."""
    get = r.metrics.registry.get_sample_value
    minutes = get("cdnvideo_traffic_windows_owed", {"account": ACC})
    overdue = get("cdnvideo_traffic_settle_overdue_seconds", {"account": ACC})
    assert minutes is not None
    assert overdue is not None
    return minutes, overdue


async def test_a_budget_below_what_one_minute_replies_cost_keeps_first_reads_and_says_so(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    # 1-minute replies: the default schedule costs 2 first-read + 2 settle requests a minute
    # (check-config: 4.00 on such a platform); the budget allows 3. First reads go first.
    config = SimConfig(
        late_seconds=240, resources_per_account=RESOURCES, quirks=frozenset({"one-minute-window"})
    )
    async with rig(aiohttp_server, config, budget=3) as r:
        poller = r.poller()
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        assert await drive(r, poller, 3600) == []
        hour_owed, hour_overdue = owed(r)
        assert await drive(r, poller, HOURS - 3600) == []
        led = poller.accounts.ledger(ACC)
        cursor = led.cursor
        assert cursor is not None
        assert cursor >= r.clock.time() - 60 - 120 - 60 - 60  # first reads kept up
        assert r.windows("missed") == 0
        minutes, overdue = owed(r)
        # What cannot be settled is owed, and says so: the gauges grow with the shortfall.
        polled = r.clock.time() - 15  # the gauges are set at the end of each poll
        assert minutes == sum(run.minutes for run in led.pending if run.due_at((5,)) <= polled)
        assert minutes > hour_owed > 20  # about half a minute a minute short
        assert overdue > hour_overdue > 1200
        # Every minute's first read is counted: at least what the first reads saw.
        truth = sum(
            r.sim.traffic_final(ACC, m)["edge_requests_total"]
            for m in range(first, cursor + 60, 60)
        )
        counted = counter(r.fragment(), "edge_requests_total")
        assert counted is not None
        assert 0.9 * truth < counted < truth
