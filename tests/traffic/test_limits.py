"""Every minute counted under limits: simulated hours against the simulator over HTTP under
the platform's own limit of 6 requests a minute, and a day under a request budget of 3 a minute.
Counters must equal the simulator's final figures exactly, with no minute given up or missed."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli import main
from exporter.config import ConfigError, parse_config
from exporter.simulator import SimConfig
from exporter.simulator.routes_traffic import parse_minute
from exporter.traffic import TrafficPoller
from exporter.upstream import UpstreamError
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    assert_counters_equal_truth,
    drain,
    outage,
    rig,
    start_and_drive,
    traffic_requests,
)

DAY = 24 * 3600
Window = tuple[str, str]


async def drive_failing(r: Rig, poller: TrafficPoller, seconds: float) -> list[UpstreamError]:
    """Poll every 15 s, a scrape after each poll; returns the errors of the polls that
    failed."""
    failed: list[UpstreamError] = []
    end = r.clock.time() + seconds
    while r.clock.time() < end:
        try:
            await poller.poll(ACC)
        except UpstreamError as exc:
            failed.append(exc)
        r.scrape()
        r.clock.advance(15)
    return failed


async def drive_limited(r: Rig, poller: TrafficPoller, seconds: float) -> int:
    """Poll every 15 s; returns the polls failed because the platform's limit refused all
    their reads (any other failure fails the test)."""
    failed = await drive_failing(r, poller, seconds)
    assert all(exc.rate_limited for exc in failed), failed
    return len(failed)


def settle_halves(r: Rig) -> dict[tuple[Window, str], list[float]]:
    """When each half of each settle read (a window over one minute) was sent, over the
    simulator's request log (its last 1000 requests) after its first 10 minutes."""
    out: dict[tuple[Window, str], list[float]] = {}
    logged = list(r.sim.requests)
    for req in logged:
        if req.area != "traffic" or req.time < logged[0].time + 600:
            continue
        q = dict(req.query)
        window = (q["start"], q["end"])
        if parse_minute("end", q["end"]) - parse_minute("start", q["start"]) <= 60:
            continue
        half = "resources" if req.path.rstrip("/").endswith("resources") else "totals"
        out.setdefault((window, half), []).append(req.time)
    return out


RESOURCES = 3


@pytest.mark.slow
@pytest.mark.parametrize(
    ("quirk", "seconds"),
    [("", DAY / 2), ("rate-limit-200", DAY / 4), ("rate-limit-420", DAY / 4)],
)
async def test_a_platform_limit_of_6_a_minute_loses_nothing(
    aiohttp_server: ServerFactory, tmp_path: Path, quirk: str, seconds: float
) -> None:
    # Figures rise for 3 minutes after a minute closes; [1, 4] costs 4.2 requests a minute
    # on average, in bursts (the catch-up after an outage) that the platform's limit of 6
    # refuses: 429 with Retry-After over 12 hours, a 200 "Rate limit exceeded" body or a 420
    # without Retry-After over 6 hours (the same outage and catch-up in the middle).
    config = SimConfig(
        late_seconds=180,
        resources_per_account=RESOURCES,
        api_requests_per_minute=6,
        quirks=frozenset({quirk} - {""}),
    )
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[1, 4])
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        failed = await drive_limited(r, poller, seconds / 2)
        await outage(r, poller, 20 * 60, "503")  # the catch-up afterwards meets the limit
        failed += await drive_limited(r, poller, seconds / 2)
        assert r.sim.rate.refused > 0  # the platform's limit was reached
        # Polls that read nothing while the platform refused or its Retry-After ran failed
        # (cdnvideo_up 0) without costing any settle run a failure.
        assert failed > 0
        drained = await drain(r, state_file, revisit_minutes=[1, 4])
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.windows("given_up") == 0
        assert r.windows("missed") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
        assert traffic_requests(r) > 0


@pytest.mark.slow
async def test_a_budget_of_3_a_minute_with_the_default_schedule_loses_nothing_over_a_day(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    # Figures rise for 4 minutes after a minute closes; the default schedule (one settle read
    # 5 minutes after the first read) costs 2.4 requests a minute, the budget allows 3.
    config = SimConfig(late_seconds=240, resources_per_account=RESOURCES, api_requests_per_minute=3)
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config, budget=3) as r:
        poller = r.poller(state_file=state_file)
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, DAY)
        spent = traffic_requests(r)
        postponed = r.metrics.registry.get_sample_value(
            "cdnvideo_upstream_polls_postponed_total", {"area": "traffic"}
        )
        assert postponed  # the budget made reads wait (measured: 1148 of 5760 polls)
        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.windows("given_up") == 0
        assert r.windows("missed") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
        # Never more than 3 in any 60 s (the platform, limited to 3, refused none), and 2.4 a
        # minute overall (measured: 3453 requests for 1440 minutes).
        assert r.sim.rate.refused == 0
        assert 2.3 * 1440 < spent < 2.5 * 1440
        # Settle reads (the windows of several minutes): each half asked for exactly once,
        # and a half the budget could not afford read on its own at a later poll.
        halves = settle_halves(r)
        assert all(len(times) == 1 for times in halves.values())
        windows = {w for (w, _) in halves}
        assert all((w, h) in halves for w in windows for h in ("totals", "resources"))
        split = [w for w in windows if halves[w, "totals"] != halves[w, "resources"]]
        assert split  # measured: 82 of the 83 settle reads the log holds


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_budget_below_the_schedule_cost_is_refused_with_the_cost(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yml"
    config.write_text(
        "upstream: {token: static-token-123, max_requests_per_minute: 2}\n"
        "traffic: {revisit_minutes: [5, 15]}\n"
    )
    assert main([command, "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("config error: upstream.max_requests_per_minute: 2 is below")
    assert "revisit_minutes [5, 15] take 2.80 requests a minute" in err
    assert "give at least 3" in err


def test_a_budget_at_the_schedule_cost_is_accepted() -> None:
    token = {"token": "static-token-123"}
    assert parse_config({"upstream": {**token, "max_requests_per_minute": 3}}, {})
    # One request a minute suffices for totals alone without settling; 0 is no limit.
    cheap = {"per_resource": False, "revisit_minutes": 0}
    assert parse_config({"upstream": {**token, "max_requests_per_minute": 1}, "traffic": cheap}, {})
    with pytest.raises(ConfigError, match=r"take 2\.40 requests a minute"):
        parse_config({"upstream": {**token, "max_requests_per_minute": 1}}, {})


async def test_a_reply_with_a_bogus_date_moves_no_window(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    # Every 10th metrics reply says the platform's clock is an hour ahead.
    config = SimConfig(
        late_seconds=240, resources_per_account=RESOURCES, quirks=frozenset({"bogus-date"})
    )
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        first, logs = await start_and_drive(r, poller, 60 * 60)
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor == first + 59 * 60  # one minute a minute, none skipped, none early
        rejected = r.metrics.registry.get_sample_value(
            "cdnvideo_upstream_clock_readings_rejected_total"
        )
        assert rejected == r.sim.metrics_replies // 10  # every outlier, and nothing else
        assert rejected >= 10
        events = [e["event"] for e in logs if e["event"].startswith("upstream_clock")]
        assert "upstream_clock_skew" not in events
        assert 1 <= events.count("upstream_clock_reading_rejected") <= rejected
        # No read asked for a minute that had not closed on our clock (the simulator's).
        for req in r.sim.requests:
            end = parse_minute("end", dict(req.query)["end"])
            assert end <= req.time, (req.query, req.time)
        drained = await drain(r, state_file)
        assert drained.accounts.ledger(ACC).cursor == cursor
        assert r.windows("missed") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
