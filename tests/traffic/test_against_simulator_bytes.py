"""Bytes delivered against the simulator's truth: folded resources, an outage, a restart.

The simulator's truth of a minute's bytes is its bandwidth x 60 / 8 (whole bytes); the
exporter only ever sees bandwidth averaged over the window it asked for (1 to 10 minutes,
rounded to 3 decimals) and partial while the minute is late.
"""

from __future__ import annotations

from pathlib import Path

from exporter.simulator import SimConfig
from exporter.support.platform_fields import SIDES
from exporter.traffic.families import ACCOUNT, RESOURCE
from exporter.traffic.ledger import OTHER
from tests.traffic.test_against_simulator import (
    ACC,
    ServerFactory,
    drain,
    outage,
    rig,
    start_and_drive,
)


async def test_bytes_delivered_equal_the_truth_with_folding_an_outage_and_a_restart(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    config = SimConfig(late_seconds=200, resources_per_account=8)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file, max_resources=3)
        first, _ = await start_and_drive(r, poller, 12 * 60)
        await outage(r, poller, 14 * 60)
        await r.drive(poller, 20 * 60)
        assert r.windows("backfilled") >= 14  # read in windows of up to 10 minutes
        assert r.windows("revised") > 0
        drained = await drain(r, state_file, max_resources=3)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        minutes = range(first, cursor + 60, 60)
        f = r.fragment()
        named = [res.id for res in r.sim.resources(ACC)] + [OTHER]
        for side in SIDES:
            key = f"{side}_transferred_bytes"
            truth = sum(r.sim.traffic_truth(ACC, m)[key] for m in minutes)
            assert truth > 0
            assert f.value(ACCOUNT.transferred_bytes_total, account=ACC, side=side) == truth
            per = [
                f.value(RESOURCE.transferred_bytes_total, account=ACC, resource=rid, side=side)
                or 0.0
                for rid in named
            ]
            assert sum(per) == truth, side  # folded or own series: none lost or twice
        other = f.value(RESOURCE.transferred_bytes_total, account=ACC, resource=OTHER, side="edge")
        assert other is not None
        assert other > 0
