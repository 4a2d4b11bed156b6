"""A resource added on the platform while the exporter runs is first scraped at 0, whatever
the scrape interval: its counter series are held at 0 until a scrape was answered with that
0, so ``increase()`` sees its whole first count (docs/windowing.md, "A new series starts at
0"). The simulator's ``resource-churn`` quirk adds, renames and deletes resources."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.exposition import Store
from exporter.simulator import SimConfig
from exporter.traffic import TrafficPoller
from exporter.traffic.counters import EDGE_REQUESTS
from tests.traffic.test_against_simulator import ACC, Rig, ServerFactory, rig

CONFIG = SimConfig(late_seconds=240, resources_per_account=2, quirks=frozenset({"resource-churn"}))
REQUESTS = "cdnvideo_resource_requests"  # the family's name as the parser gives it
Scraped = dict[str, float]  # resource -> edge requests


def scrape(store: Store) -> Scraped:
    """What Prometheus reads: the rendered body, the scrape answered with it."""
    exposition = store.render_sync()
    store.mark_served(exposition)
    return {
        s.labels["resource"]: s.value
        for fam in text_string_to_metric_families(exposition.plain.decode())
        if fam.name == REQUESTS
        for s in fam.samples
        if s.name.endswith("_total") and s.labels["side"] == "edge"
    }


async def drive_scraped(r: Rig, poller: TrafficPoller, minutes: int, phase: int) -> list[Scraped]:
    """Poll every 15 s, scrape every 60 s (Prometheus' default interval) 7.5 s after the
    poll of each minute numbered ``phase`` (0-3)."""
    scrapes: list[Scraped] = []
    for tick in range(minutes * 4):
        await poller.poll(ACC)
        if tick % 4 == phase:
            r.clock.advance(7.5)
            scrapes.append(scrape(r.store))
            r.clock.advance(7.5)
        else:
            r.clock.advance(15)
    return scrapes


@pytest.mark.parametrize("phase", range(4))  # the scrape after each of a minute's polls
async def test_a_resource_added_while_running_is_first_scraped_at_0(
    aiohttp_server: ServerFactory, phase: int
) -> None:
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller()
        scrapes = await drive_scraped(r, poller, 130, phase)
        added = [c.resource for c in r.sim.churn_log if c.account == ACC and c.kind == "add"]
        assert added  # resource-churn: a change every 20 minutes, an add among them
        led = poller.accounts.ledger(ACC)
        for rid in added:
            seen = [s[rid] for s in scrapes if rid in s]
            assert seen[0] == 0.0, (rid, seen[:3])
            # ... and from the next scrape on, its count: nothing held back for good
            assert seen[1] > 0, (rid, seen[:3])
            assert seen[-1] == led.series[rid].values[EDGE_REQUESTS]
