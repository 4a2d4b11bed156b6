"""The traffic poller against the simulator with the real platform's shapes switched on."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.traffic.families import ACCOUNT, RESOURCE
from exporter.upstream import UpstreamError
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_against_simulator import (
    ACC,
    ServerFactory,
    assert_exact_after_drain,
    drain,
    outage,
    rig,
)
from tests.traffic.test_host_clock import assert_account_counters_equal_truth


async def test_one_minute_answers_to_long_windows_lose_nothing(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Long windows answered 200 with the last minute only: the backfill and the settle
    reads see the shorter echo, switch to 1-minute reads, and every counter is exact."""
    config = SimConfig(late_seconds=240, resources_per_account=4)
    config = config.replace(quirks=frozenset({"one-minute-window"}))
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        await r.drive(poller, 8 * 60)
        first = poller.accounts.ledger(ACC).cursor - 7 * 60  # type: ignore[operator]
        await outage(r, poller, 12 * 60)
        await r.drive(poller, 15 * 60)
        assert poller.accounts.ledger(ACC).long_refused
        assert r.windows("mismatched") >= 5
        assert r.windows("missed") == 0
        assert await assert_exact_after_drain(r, state_file, first) > 0


async def test_string_medians_bad_gauges_and_a_status_key_still_count_exactly(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    quirks = frozenset({"string-values", "bad-values", "status-key"})
    config = SimConfig(late_seconds=120, resources_per_account=3, quirks=quirks)
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        await r.drive(poller, 6 * 60)
        first = poller.accounts.ledger(ACC).cursor - 5 * 60  # type: ignore[operator]
        f = r.fragment()
        # Medians sent as strings under upper-case range names are read as numbers.
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor is not None
        seen = r.sim.traffic_window(ACC, cursor, cursor + 60)
        median = f.value(ACCOUNT.response_time_median, account=ACC, side="edge", size_range="1m_2m")
        assert median == seen["edge_request_time_1m_2m"]
        assert median is not None
        assert median > 0
        # The bad row loses its unreadable gauges alone; its counters and the others stay.
        bad = r.sim.resources(ACC)[-1].id
        assert f.value(RESOURCE.edge_hit_ratio, resource=bad) is None
        assert f.value(RESOURCE.bandwidth, resource=bad, side="edge") is None
        assert f.value(RESOURCE.bandwidth, resource=bad, side="origin") is not None
        good = r.sim.resources(ACC)[0].id
        assert f.value(RESOURCE.edge_hit_ratio, resource=good) is not None
        rejected = {
            field: r.metrics.registry.get_sample_value(
                "cdnvideo_upstream_values_rejected_total", {"area": "traffic", "field": field}
            )
            for field in ("edge_hit_ratio", "edge_bandwidth", "edge_request_time_0_250k")
        }
        assert all(v is not None and v >= 6 for v in rejected.values()), rejected
        # Its bytes delivered on the edge side follow its bandwidth: never readable, never
        # counted (not counted as 0); every other counter is exact.
        unreadable = frozenset({(bad, "edge_transferred_bytes")})
        assert await assert_exact_after_drain(r, state_file, first, unreadable) > 0


async def test_windows_the_platform_times_out_on_are_halved_and_lose_nothing(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    config = SimConfig(late_seconds=240, resources_per_account=3)
    config = config.replace(quirks=frozenset({"slow-long-windows"}))
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        timeouts = 0
        for _ in range(12 * 4):
            try:
                await poller.poll(ACC)
            except UpstreamError as exc:
                timeouts += 1 if exc.status == 504 else 100
            r.clock.advance(15)
        first = poller.accounts.ledger(ACC).cursor - 11 * 60  # type: ignore[operator]
        assert timeouts == 1  # one 5-minute settle read; the next ones are 2 + 2 + 1
        assert poller.accounts.ledger(ACC).slow_cap == 2
        await outage(r, poller, 12 * 60)
        await r.drive(poller, 15 * 60)
        assert r.windows("missed") == 0
        assert r.windows("backfilled") >= 12
        assert r.windows("given_up") == 0
        assert await assert_exact_after_drain(r, state_file, first) > 0


@pytest.mark.parametrize(
    ("offset", "per_resource"),
    [(-480.0, True), (300.0, True), (-480.0, False), (-1200.0, True), (-1200.0, False)],
)
async def test_windows_follow_the_platform_clock_when_ours_is_off(
    aiohttp_server: ServerFactory, tmp_path: Path, offset: float, per_resource: bool
) -> None:
    """Our clock 8 or 20 minutes fast (the platform 480 or 1200 s behind) or 5 minutes slow,
    from a first start: the skew is measured from the Date header; nothing read before it is
    confirmed is counted; windows follow the platform's clock, however far behind or ahead of
    ours, and every counter equals the final truth."""
    config = SimConfig(late_seconds=240, resources_per_account=3, clock_offset_seconds=offset)
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file, per_resource=per_resource)
        with capture_logs() as logs:
            polls = 0
            while poller.accounts.ledger(ACC).cursor is None:
                await poller.poll(ACC)
                r.clock.advance(15)
                polls += 1
            first = poller.accounts.ledger(ACC).cursor
            assert first is not None
            await r.drive(poller, 20 * 60)
        skew = r.metrics.registry.get_sample_value("cdnvideo_upstream_clock_skew_seconds")
        assert skew == pytest.approx(offset, abs=1.0)
        assert [e["event"] for e in logs if e["event"].startswith("upstream_clock")] == [
            "upstream_clock_skew"
        ]
        lag = r.metrics.registry.get_sample_value("cdnvideo_traffic_lag_seconds", {"account": ACC})
        assert lag is not None
        # Measured on the platform's clock, which the reads follow: the delay and a poll.
        assert 120 <= lag <= 200
        assert poller.accounts.ledger(ACC).cursor - first >= 19 * 60  # type: ignore[operator]
        assert r.windows("missed") == 0
        drained = await drain(r, state_file, per_resource=per_resource)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert_account_counters_equal_truth(r, range(first, cursor + 60, 60), per_resource)
        # per_resource false: three 1-reading reads confirm the skew, none of them counted;
        # the replans wait for the reading behind ours, so the first poll still counts
        assert polls == 1
