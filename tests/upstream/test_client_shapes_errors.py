"""Error replies as the real platform sends them, against the simulator with each quirk on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from exporter.dvr.reply import DvrReader
from exporter.exposition import Store
from exporter.restream.reply import RestreamReader
from exporter.talking_head.reply import TalkingHeadReader
from exporter.traffic import TrafficPoller
from exporter.traffic.reply import MetricsEndpoint
from exporter.traffic.settings import TrafficSettings
from exporter.upstream import UpstreamError
from tests.rig.client import DVR_MAIN, MakeShapeRig

RESOURCES = "/app/restream/v2/demo-media/resources"


async def failure(call: Awaitable[Any]) -> UpstreamError:
    with pytest.raises(UpstreamError) as info:
        await call
    return info.value


async def test_bodyless_errors_are_classified_by_status(make_sim_rig: MakeShapeRig) -> None:
    r = await make_sim_rig(("bodyless-errors",), login=False)
    r.sim.faults.set("dvr", "503")
    err = await failure(DvrReader(r.client).dvr_stream("demo-media", "live/main"))
    assert (err.kind, err.status, err.body) == ("http", 503, None)
    assert err.message == "HTTP 503 service unavailable (no body)"
    assert err.retryable
    assert len(r.sent(DVR_MAIN)) == 2  # retried as any 5xx is
    r.sim.faults.clear()
    missing = await failure(DvrReader(r.client).dvr_stream("demo-media", "no/such"))
    assert (missing.status, missing.message) == (404, "HTTP 404 not found (no body)")
    assert len(r.sent("/app/dvr-net/v1/demo-media/streams/no/such")) == 1


@pytest.mark.parametrize("quirk", [(), ("description-errors",)])
async def test_error_text_is_read_from_message_or_description(
    make_sim_rig: MakeShapeRig, quirk: tuple[str, ...]
) -> None:
    r = await make_sim_rig(quirk, login=False)
    err = await failure(RestreamReader(r.client).restream_resources("no-such-account"))
    assert (err.status, err.message) == (404, "Client not found")
    assert ("message" in err.body) is not bool(quirk)
    th = await failure(TalkingHeadReader(r.client).th_status("demo-media", "no-such-task"))
    assert th.status == 404
    assert th.message == "No such task"


async def test_error_420_parameter_errors_fall_back_to_one_minute_windows(
    make_sim_rig: MakeShapeRig,
) -> None:
    r = await make_sim_rig(("error-420",), login=False, max_window_minutes=1, late_seconds=60)
    start = int(r.clock.time()) // 60 * 60 - 600
    err = await failure(MetricsEndpoint(r.client).traffic("demo-media", start, start + 300, False))
    assert (err.status, err.invalid_parameters, err.rate_limited) == (420, True, False)
    assert "minute" in err.message.lower() or "window" in err.message.lower()

    settings = TrafficSettings(delay_seconds=120, revisit_minutes=3, catch_up_minutes=30)
    poller = TrafficPoller(MetricsEndpoint(r.client), Store(r.clock), r.metrics, r.clock, settings)
    await poller.poll("demo-media")
    r.clock.advance(5 * 60)  # five minutes fall due at once: one long window, then refused
    await poller.poll("demo-media")
    assert poller.accounts.ledger("demo-media").long_refused
    for _ in range(8):
        r.clock.advance(15)
        await poller.poll("demo-media")
    read = r.sample("cdnvideo_traffic_windows_total", account="demo-media", outcome="read")
    backfilled = r.sample(
        "cdnvideo_traffic_windows_total", account="demo-media", outcome="backfilled"
    )
    assert (read or 0) + (backfilled or 0) >= 6
    assert r.sample("cdnvideo_traffic_windows_total", account="demo-media", outcome="missed") in (
        None,
        0,
    )


Breach = Callable[[UpstreamError], None]


@pytest.mark.parametrize(
    ("quirk", "kind", "status", "retry_after"),
    [
        ((), "http", 429, True),
        (("rate-limit-420",), "http", 420, False),
        (("rate-limit-200",), "error_body", 200, False),
        (("rate-limit-420", "rate-limit-200"), "error_body", 200, False),
    ],
)
async def test_rate_limit_answers_are_rate_limits(
    make_sim_rig: MakeShapeRig, quirk: tuple[str, ...], kind: str, status: int, retry_after: bool
) -> None:
    r = await make_sim_rig(quirk, login=False, api_requests_per_minute=2)
    for _ in range(2):
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    reply = await r.client.request("dvr", "GET", DVR_MAIN, retry=False)
    err = await failure(r.client.get_json("dvr", DVR_MAIN))
    assert (err.kind, err.status, err.rate_limited, err.invalid_parameters) == (
        kind,
        status,
        True,
        False,
    )
    assert "Rate limit exceeded" in err.message
    assert ("Retry-After" in reply.headers) is retry_after
    # another account has its own allowance
    assert await DvrReader(r.client).dvr_stream("demo-shop", "live/main")
