"""Series per resource under each granularity setting, counted in a real exposition.

The simulator serves a fixed data set over HTTP on 127.0.0.1; the traffic poller reads it
with each setting (an injected clock, so minutes pass without waiting); the exposition the
store renders is parsed and its series with a ``resource`` label are counted. docs/metrics.md
shows the table, so the figures there are measured, not worked out by hand.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence

import aiohttp
import structlog.testing
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import UpstreamSettings
from exporter.exposition import FamilySelection, Store
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.reply import MetricsEndpoint
from exporter.traffic.settings import TrafficSettings
from exporter.upstream import UpstreamClient

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z
ACCOUNT = "demo-media"
RESOURCES = 3


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of the table: what is set, and the selection/traffic keys that set it."""

    label: str
    traffic: Mapping[str, object] = dataclasses.field(default_factory=dict)
    exclude: tuple[str, ...] = ()


SETTINGS = (
    Setting("default (`codes`, request times on)"),
    Setting("`resource_status_codes: classes`", {"resource_status_codes": "classes"}),
    Setting("`resource_request_times: false`", {"resource_request_times": False}),
    Setting(
        "`classes` and `resource_request_times: false`",
        {"resource_status_codes": "classes", "resource_request_times": False},
    ),
    Setting(
        "both, and `metrics.exclude: ['^cdnvideo_resource_.*_per_second$']`",
        {"resource_status_codes": "classes", "resource_request_times": False},
        ("^cdnvideo_resource_.*_per_second$",),
    ),
)


@dataclasses.dataclass(frozen=True)
class Count:
    per_resource: int  # series carrying one resource's label, counters and gauges
    counters: int  # of which counter series
    account: int  # series of the account families (no resource label)


async def poll_store(base_url: str, token: str, clock: FakeClock, s: Setting) -> Store:
    """A store holding what the traffic poller publishes for ``ACCOUNT`` under ``s``, after
    three minutes of polls (every series has been shown with its value)."""
    store = Store(clock, selection=FamilySelection(exclude=s.exclude))
    settings = TrafficSettings(delay_seconds=120, revisit_minutes=0, **s.traffic)  # type: ignore[arg-type]
    async with aiohttp.ClientSession() as session:
        upstream = UpstreamSettings(base_url=base_url, token=token)
        client = UpstreamClient(session, upstream, clock=clock, retries=0)
        poller = TrafficPoller(MetricsEndpoint(client), store, SelfMetrics(), clock, settings)
        for _ in range(12):
            await poller.poll(ACCOUNT)
            clock.advance(15)
    return store


def count(text: str, resources: int) -> Count:
    """Series per resource in an exposition where every resource has as many."""
    per: Counter[str] = Counter()
    counters = account = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            resource = sample.labels.get("resource")
            if resource is None:
                account += family.name.startswith("cdnvideo_account_")
            elif resource != "__other__":
                per[resource] += 1
                counters += family.type == "counter"
    if len(per) != resources or len(set(per.values())) != 1:
        raise AssertionError(f"every resource should have as many series: {dict(per)}")
    return Count(next(iter(per.values())), counters // resources, account)


async def each_setting(resources: int, settings: Sequence[Setting] = SETTINGS) -> list[Store]:
    """The simulator with ``resources`` CDN resources on 127.0.0.1, read once per setting."""
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(resources_per_account=resources), clock)
    runner = web.AppRunner(sim.build_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        stores = []
        for setting in settings:  # each from the same instant, so each store is fresh at its end
            clock.set(T0)
            stores.append(await poll_store(base, sim.token, clock, setting))
        return stores
    finally:
        await runner.cleanup()


def series_table() -> list[str]:
    """The markdown table of series per resource, measured (the run's log lines are kept out
    of the generator's output)."""
    with structlog.testing.capture_logs():
        stores = asyncio.run(each_setting(RESOURCES))
    counts = [count(store.render_sync().plain.decode(), RESOURCES) for store in stores]
    lines = [
        "| setting | series per resource | of which counters | account series |",
        "|---|---|---|---|",
    ]
    for setting, c in zip(SETTINGS, counts, strict=True):
        lines.append(f"| {setting.label} | {c.per_resource} | {c.counters} | {c.account} |")
    return lines
