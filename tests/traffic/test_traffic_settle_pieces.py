"""Settle reads of a run longer than the platform answers (1-minute replies, 422 or 504 on long
windows) are read in pieces that are kept: under a request budget or the platform's limit of
6 a minute, counting goes on and every counter ends equal to the simulator's final figures.
And when the budget is below what such a platform really costs, first reads keep going."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.traffic import TrafficPoller
from exporter.traffic.poller import SLOW_HOLD_SECONDS
from exporter.upstream import UpstreamError
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    assert_counters_equal_truth,
    drain,
    rig,
)

HOURS = 3 * 3600
RESOURCES = 3


async def drive(r: Rig, poller: TrafficPoller, seconds: float) -> list[UpstreamError]:
    """Poll every 15 s; the polls that failed other than by the platform's rate limit."""
    failed: list[UpstreamError] = []
    end = r.clock.time() + seconds
    while r.clock.time() < end:
        try:
            await poller.poll(ACC)
        except UpstreamError as exc:
            if not exc.rate_limited:
                failed.append(exc)
        r.clock.advance(15)
    return failed


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
        first = poller.ledger(ACC).cursor
        assert first is not None
        failed = await drive(r, poller, HOURS)
        # Only the 504 of a long settle window, once an hour (when full windows are tried
        # again after SLOW_HOLD_SECONDS); it halves the window and fails its poll.
        assert all(exc.status == 504 for exc in failed), failed
        assert len(failed) <= HOURS / SLOW_HOLD_SECONDS
        led = poller.ledger(ACC)
        cursor = led.cursor
        assert cursor is not None
        # Every minute first-read as it became ready (none waits behind a settle read) ...
        assert cursor >= r.clock.time() - 60 - 120 - 60 - 60
        # ... and the settle reads keep up: only the runs of the last minutes are owed.
        assert sum(run.minutes for run in led.pending) <= 12
        drained = await drain(r, state_file)
        assert drained.ledger(ACC).cursor == cursor
        assert r.windows("given_up") == 0
        assert r.windows("missed") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
