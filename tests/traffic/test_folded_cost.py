"""With traffic.max_resources folding resources into __other__, settle reads cost what
docs/windowing.md says (2 requests per revisit_minutes), however the folded set changes from
minute to minute, and the sum of the resource series stays exact."""

from __future__ import annotations

from pathlib import Path

from exporter.simulator import SimConfig
from exporter.simulator.routes_traffic import parse_minute
from exporter.traffic.ledger import OTHER
from tests.traffic.test_against_simulator import (
    ACC,
    ServerFactory,
    counter,
    drain,
    rig,
    start_and_drive,
)


async def test_folded_settle_reads_cost_what_the_docs_say(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    config = SimConfig(late_seconds=200, resources_per_account=8)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file, max_resources=3)
        first, _ = await start_and_drive(r, poller, 60 * 60)
        spans = [
            parse_minute("end", q["end"]) - parse_minute("start", q["start"])
            for q in (dict(req.query) for req in r.sim.requests if req.area == "traffic")
        ]
        # 60 minutes: a 5-minute settle read (2 requests) every 5 minutes, not one per
        # folded set (measured: 11 reads; before, 13, of which 5 were of 2 or 3 minutes).
        assert spans.count(300) in (22, 24)
        assert len(spans) - spans.count(60) == spans.count(300)
        drained = await drain(r, state_file, max_resources=3)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        minutes = range(first, cursor + 60, 60)
        f = r.fragment()
        total = sum(r.sim.traffic_final(ACC, m)["edge_requests_total"] for m in minutes)
        assert counter(f, "edge_requests_total") == total
        named = [res.id for res in r.sim.resources(ACC)] + [OTHER]
        per = [counter(f, "edge_requests_total", rid) or 0.0 for rid in named]
        assert sum(per) == total  # late data went to a resource series, none lost or twice
