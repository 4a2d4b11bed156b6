"""A counter series new to Prometheus starts at 0 for one refresh, then shows its value, so
increase() sees its first step: the lateness counters. Series a reload or a restart newly
exports: test_traffic_first_exposure.py."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from exporter.simulator import SimConfig
from exporter.traffic.counters import EDGE_REQUESTS
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


def edge_requests(text: str) -> float | None:
    """The account's edge requests in a rendered /metrics body."""
    return next(
        (
            s.value
            for fam in text_string_to_metric_families(text)
            if fam.name == "cdnvideo_account_requests"
            for s in fam.samples
            if s.name.endswith("_total") and s.labels == {"account": ACC, "side": "edge"}
        ),
        None,
    )


async def test_a_new_series_is_held_at_0_until_the_process_first_scrape(
    aiohttp_server: ServerFactory,
) -> None:
    """Polls before the process's first scrape (Prometheus scrapes every 60 s, the exporter
    polls every 15 s): the first scrape reads every new series at 0, the next its count.
    Before, the second poll showed the counts, so the first scrape saw the series born at
    them and increase() lost their first minutes (seed 4070's open half)."""
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(revisit_minutes=5)
        for _ in range(4):  # a minute of polls, nobody scraped
            await poller.poll(ACC)
            r.clock.advance(15)
        first = r.store.render_sync()
        r.store.mark_served(first)  # the first scrape is answered
        assert edge_requests(first.plain.decode()) == 0
        await poller.poll(ACC)
        count = poller.accounts.ledger(ACC).totals[EDGE_REQUESTS]
        assert count > 0
        assert edge_requests(r.store.render_sync().plain.decode()) == count
