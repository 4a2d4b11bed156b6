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


def test_a_resource_folded_but_still_shown_under_its_own_series_is_named_anew() -> None:
    """A resource ``max_resources`` folds into ``__other__`` keeps its own series for the
    retention period (shown with its counters so far); a rename read meanwhile renames that
    series' info too, not only once the resource is back in the top (simulation seeds 3038,
    3051: the old name shown for 100 minutes after the rename)."""
    from exporter.traffic.ledger import AccountLedger
    from exporter.traffic.parse import ResourceRow, parse_row
    from exporter.traffic.windows import Window

    t = 1_767_225_600
    led = AccountLedger()

    def row(rid: str, name: str, requests: float) -> ResourceRow:
        return ResourceRow(
            rid, name, f"{name}.example", parse_row({"edge_requests_total": requests})
        )

    totals = parse_row({"edge_requests_total": 10.0})
    led.count_first_read(Window(t, t + 60), totals, [row("r1", "www", 10.0)], None, t + 90, None)
    assert led.series["r1"].name == "www"
    led.count_first_read(
        Window(t + 60, t + 120),
        totals,
        [row("r1", "www2", 4.0), row("r2", "vod", 6.0)],
        frozenset({"r2"}),  # the top 1 is r2: r1 folded
        t + 150,
        None,
    )
    assert (led.series["r1"].name, led.series["r1"].cname) == ("www2", "www2.example")
