"""A resource renamed on the platform is named anew on ``cdnvideo_resource_info`` at the
first read answered after the rename, its counters continuing under the same labels
(docs/windowing.md, "When a rename shows")."""

from __future__ import annotations

import pytest

from exporter.simulator import SimConfig
from exporter.traffic.families import RESOURCE, RESOURCE_INFO
from tests.traffic.test_against_simulator import ACC, ServerFactory, rig

DELAY = 120


@pytest.mark.parametrize("quirks", [(), ("one-minute-window",)])
async def test_a_rename_shows_at_the_first_read_after_it(
    aiohttp_server: ServerFactory, quirks: tuple[str, ...]
) -> None:
    config = SimConfig(late_seconds=240, resources_per_account=2, quirks=frozenset(quirks))
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(delay_seconds=DELAY)
        await r.drive(poller, 600)
        traffic = r.sim.traffic_reader(ACC)
        assert traffic is not None
        res = traffic.traffic.resources[0]

        def named(name: str) -> bool:
            return r.fragment().value(RESOURCE_INFO, resource=res.id, resource_name=name) == 1

        def edge() -> float | None:
            return r.fragment().value(RESOURCE.requests_total, resource=res.id, side="edge")

        assert named(res.name)
        renamed_at, before = r.clock.time(), edge()
        assert before is not None
        assert before > 0
        r.sim.rename_resource(ACC, res.id, "renamed")
        reads = r.windows("read")
        while r.windows("read") == reads:  # settle reads and polls without a new minute
            assert named(res.name)
            assert not named("renamed")
            await poller.poll(ACC)
            r.clock.advance(15)
        assert named("renamed")
        assert not named(res.name)
        assert r.clock.time() - renamed_at <= DELAY + 75
        after = edge()
        assert after is not None
        assert after > before  # the same counter series, continued
