"""The traffic poller against the simulator with the real platform's shapes switched on."""

from __future__ import annotations

from pathlib import Path

from test_against_simulator import (
    ACC,
    ServerFactory,
    assert_counters_equal_truth,
    drain,
    rig,
)

from exporter.simulator import SimConfig


async def test_one_minute_answers_to_long_windows_lose_nothing(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Long windows answered 200 with the last minute only: the backfill and the settle
    reads see the shorter echo, switch to 1-minute reads, and every counter is exact."""
    config = SimConfig(late_seconds=240, resources_per_account=4)
    config = config.replace(quirks=frozenset({"one-minute-window"}))
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        await r.drive(poller, 8 * 60)
        first = poller.ledger(ACC).cursor - 7 * 60  # type: ignore[operator]
        r.sim.faults.set("traffic", "500")
        await r.drive(poller, 12 * 60, fails=True)
        r.sim.faults.clear("traffic")
        await r.drive(poller, 15 * 60)
        assert poller.ledger(ACC).long_refused
        assert r.windows("mismatched") >= 5
        assert r.windows("missed") == 0
        drained = await drain(r, state_file)
        cursor = drained.ledger(ACC).cursor
        assert cursor is not None
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
