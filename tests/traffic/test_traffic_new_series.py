"""A counter series new to Prometheus starts at 0 for one refresh, then shows its value, so
increase() sees its first step: the lateness counters, and series a restart newly exports
(finer per-resource status codes) although the state file holds their values."""

from __future__ import annotations

from pathlib import Path

from exporter.simulator import SimConfig
from exporter.traffic.families import LATE_HIT_BYTES, LATE_REQUESTS, RESOURCE
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


async def test_series_a_restart_newly_exports_start_at_0(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    res, by_class = RESOURCE.responses_total, RESOURCE.responses_by_class_total
    ok = {"class": "2xx"}
    async with rig(aiohttp_server, CONFIG) as r:
        rid = r.sim.resources(ACC)[0].id
        before = r.poller(state_file=state_file, resource_status_codes="classes")
        for _ in range(20):
            await before.poll(ACC)
            r.clock.advance(15)
        f = r.fragment()
        assert f.value(res, account=ACC, resource=rid, side="edge", code="200") is None
        classes = f.value(by_class, account=ACC, resource=rid, side="edge", **ok)
        assert classes is not None
        assert classes > 0

        after = r.poller(state_file=state_file, resource_status_codes="codes")
        await after.poll(ACC)
        f = r.fragment()
        # New to Prometheus: 0, although the ledger holds its count; the 2xx series goes on.
        assert f.value(res, account=ACC, resource=rid, side="edge", code="200") == 0.0
        assert f.value(by_class, account=ACC, resource=rid, side="edge", **ok) >= classes  # type: ignore[operator]
        r.clock.advance(15)
        await after.poll(ACC)
        value = r.fragment().value(res, account=ACC, resource=rid, side="edge", code="200")
        assert value is not None
        assert value > 0
