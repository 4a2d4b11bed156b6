"""``/metrics`` tells the store which exposition a scrape was answered with: a fragment
published at sequence ``n`` has been seen by a scraper once ``served >= n`` (new traffic
counter series are held at 0 until then; tests/traffic/test_new_resource.py)."""

from __future__ import annotations

from typing import Any

from exporter.exposition import FragmentBuilder, MetricSpec, StoreKey
from tests.rig.daemon import StartDaemon
from tests.web.bare import bare_daemon

SPEC = MetricSpec("cdnvideo_test_things", "gauge", "Things.", ("account",))


def fragment(value: float) -> Any:
    b = FragmentBuilder()
    b.declare(SPEC)
    b.add(SPEC, ("acc",), value)
    return b.build()


async def test_a_scrape_marks_only_what_its_body_held_as_served(
    start_daemon: StartDaemon,
) -> None:
    daemon, store = await bare_daemon(start_daemon)
    client = daemon.client
    store.publish(StoreKey("test", "acc"), fragment(1.0))
    rendered = await store.render()
    assert rendered.upto == store.sequence > 0
    assert store.served == 0  # rendered, not yet scraped
    store.publish(StoreKey("test", "acc"), fragment(2.0))  # after the render
    response = await client.get("/metrics")
    assert response.status == 200
    assert 'cdnvideo_test_things{account="acc"} 1\n' in await response.text()
    assert store.served == rendered.upto == store.sequence - 1  # not the newer fragment
    await store.render()
    await client.get("/metrics")
    assert store.served == store.sequence
