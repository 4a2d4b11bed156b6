"""Edges of the upstream client a reply can reach: a ``Retry-After`` date read on the injected
clock, and a redirect that must not carry the token to another server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from email.utils import formatdate
from typing import Any

import pytest

from exporter.dvr.reply import DVR_GET, DvrReader
from exporter.restream.reply import RESTREAM_LIST
from exporter.upstream import UpstreamError
from tests.rig.client import MakeRig
from tests.rig.scripted import Answer, FakePlatform

DVR = "/app/dvr-net/v1/acme/streams/live/main"
RESOURCES = "/app/restream/v2/acme/resources"
RATE_LIMITED = {"status": "error", "message": "Rate limit exceeded"}
TOKEN = "static-SECRET-token-7d2e"


async def test_a_retry_after_date_is_read_on_the_injected_clock(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    rig = make_rig()
    rig.clock.set(1_767_225_600 + 3600)  # 2026-01-01T01:00:00Z, far from the machine's clock
    when = formatdate(rig.clock.time() + 30, usegmt=True)
    platform.on("GET", RESOURCES, Answer(429, RATE_LIMITED, headers=(("Retry-After", when),)))
    reply = await rig.ops.send(RESTREAM_LIST, "acme")
    assert (reply.status, reply.headers["Retry-After"]) == (429, when)
    assert reply.retry_after == 30.0


async def test_retry_after_in_seconds_needs_no_clock(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", RESOURCES, Answer(429, RATE_LIMITED, headers=(("Retry-After", "17"),)))
    reply = await make_rig().ops.send(RESTREAM_LIST, "acme")
    assert reply.retry_after == 17.0


@pytest.fixture
async def elsewhere(aiohttp_server: Callable[..., Awaitable[Any]]) -> FakePlatform:
    """A second server on another port: where a redirect points, recording what reaches it."""
    fake = FakePlatform()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    fake.on("GET", DVR, Answer(200, {"status": "Completed", "data": []}))
    return fake


async def test_a_redirect_is_not_followed_so_the_token_stays_home(
    make_rig: MakeRig, platform: FakePlatform, elsewhere: FakePlatform
) -> None:
    moved = Answer(302, text="moved", headers=(("Location", elsewhere.url + DVR),))
    platform.on("GET", DVR, moved)
    rig = make_rig(token=TOKEN)

    reply = await rig.ops.send(
        DVR_GET, "acme", stream_name="live/main"
    )  # the admin surface passes it on
    assert [s.headers.get("CDN-AUTH-TOKEN") for s in elsewhere.seen] == []
    assert (reply.status, reply.headers) == (302, {})
    with pytest.raises(UpstreamError) as info:  # a poll reads it as no answer
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.status) == ("http", 302)

    assert [s.headers["CDN-AUTH-TOKEN"] for s in platform.requests("GET", DVR)] == [TOKEN] * 2
    assert elsewhere.seen == []
