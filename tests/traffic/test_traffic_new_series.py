"""A counter series new to Prometheus starts at 0 for one refresh, then shows its value, so
increase() sees its first step: the lateness counters. Series a reload or a restart newly
exports: test_traffic_first_exposure.py."""

from __future__ import annotations

from exporter.simulator import SimConfig
from exporter.traffic.families import LATE_HIT_BYTES, LATE_REQUESTS
from tests.traffic.test_against_simulator import ACC, ServerFactory, rig

CONFIG = SimConfig(late_seconds=240, resources_per_account=2)


async def test_the_lateness_counters_start_at_0(aiohttp_server: ServerFactory) -> None:
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(revisit_minutes=5)
        seen: list[tuple[float | None, float | None]] = []
        for _ in range(4 * 12):
            await poller.poll(ACC)
            f = r.fragment()
            late = f.value(LATE_REQUESTS, account=ACC, after_minutes="5")
            if late is not None:
                seen.append((late, f.value(LATE_HIT_BYTES, account=ACC, after_minutes="5")))
            r.clock.advance(15)
        assert len(seen) >= 2
        assert seen[0] == (0.0, 0.0)  # first refresh with the series: at 0
        assert seen[1][0] is not None
        assert seen[1][0] > 0  # the next: the late requests the first settle read added
        assert seen[1][1] is not None
        assert seen[1][1] > 0
