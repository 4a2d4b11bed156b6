"""Authentication against a real HTTP server: static token, login, renewal, rejected passwords."""

from __future__ import annotations

import asyncio

import pytest

from exporter.dvr.reply import DvrReader
from exporter.upstream.auth import RENEW_AT_FRACTION, LoginRejected
from exporter.upstream.errors import UpstreamError
from tests.rig.client import MakeRig, Rig
from tests.rig.scripted import EXPIRED, TOKEN_PATH, Answer, FakePlatform

DVR = "/app/dvr-net/v1/acme/streams/live/main"
DVR_BODY = {"status": "Completed", "stream_name": "live/main", "data": []}
LIFETIME = 21_599.0  # seconds, the platform's 21599000 ms


def login(make_rig: MakeRig, password: str = "right-password") -> Rig:
    return make_rig(username="ops@example.com", password=password)


async def test_static_token_is_sent_in_the_header(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = make_rig(token="static-token-abc")
    assert await DvrReader(rig.client).dvr_stream("acme", "live/main") == []
    (seen,) = platform.requests("GET", DVR)
    assert seen.headers["CDN-AUTH-TOKEN"] == "static-token-abc"
    assert seen.headers["User-Agent"].startswith("cdnvideo-exporter/")
    assert platform.logins == 0


async def test_static_token_is_not_renewed_on_expiry(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.expired.add("static-token-abc")
    rig = make_rig(token="static-token-abc")
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.status, info.value.message) == (403, "Token is expired")
    assert info.value.expired_token
    assert platform.logins == 0
    assert len(platform.requests("GET", DVR)) == 1


async def test_login_posts_the_form_and_uses_the_token(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig)
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    token_request, dvr_request = platform.seen
    assert (token_request.method, token_request.path) == ("POST", TOKEN_PATH)
    assert token_request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert token_request.form() == {"username": ["ops@example.com"], "password": ["right-password"]}
    assert "CDN-AUTH-TOKEN" not in token_request.headers
    assert dvr_request.headers["CDN-AUTH-TOKEN"] == "cdn1_token_1"
    # the fetched token is a secret from now on
    assert rig.redactor.text("x cdn1_token_1") == "x ********"
    assert rig.sample("cdnvideo_upstream_requests_total", area="auth", code="200") == 1


async def test_token_is_reused_until_renewal_is_due(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig)
    for _ in range(3):
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    rig.clock.advance(LIFETIME * RENEW_AT_FRACTION - 60)
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert platform.logins == 1
    assert {s.headers["CDN-AUTH-TOKEN"] for s in platform.requests("GET", DVR)} == {"cdn1_token_1"}


async def test_token_is_renewed_ahead_of_its_lifetime(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig)
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    rig.clock.advance(LIFETIME * RENEW_AT_FRACTION + 1)  # past 80 %, well before expiry
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert platform.logins == 2
    tokens = [s.headers["CDN-AUTH-TOKEN"] for s in platform.requests("GET", DVR)]
    assert tokens == ["cdn1_token_1", "cdn1_token_2", "cdn1_token_2"]


async def test_concurrent_first_requests_share_one_login(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig)
    await asyncio.gather(*(DvrReader(rig.client).dvr_stream("acme", "live/main") for _ in range(5)))
    assert platform.logins == 1


async def test_expired_token_403_renews_once_and_the_request_succeeds(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig)
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    platform.expired.add("cdn1_token_1")  # the platform ended it early
    rig.clock.advance(60)
    assert await DvrReader(rig.client).dvr_stream("acme", "live/main") == []
    assert platform.logins == 2
    tokens = [s.headers["CDN-AUTH-TOKEN"] for s in platform.requests("GET", DVR)]
    assert tokens == ["cdn1_token_1", "cdn1_token_1", "cdn1_token_2"]
    assert rig.sample("cdnvideo_upstream_requests_total", area="dvr", code="403") == 1


async def test_expired_token_403_is_renewed_only_once_per_request(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    rig = login(make_rig)
    # fine once, then "expired" whatever the token
    platform.on("GET", DVR, Answer(200, DVR_BODY), Answer(403, EXPIRED))
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    rig.clock.advance(60)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.status, info.value.area, info.value.message) == (
        403,
        "dvr",
        "Token is expired",
    )
    assert platform.logins == 2  # the first login and one renewal
    assert len(platform.requests("GET", DVR)) == 3


async def test_expired_right_after_login_does_not_log_in_again(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    rig = login(make_rig)
    platform.on("GET", DVR, Answer(403, EXPIRED))
    with pytest.raises(UpstreamError, match="Token is expired"):
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert platform.logins == 1  # a fresh token cannot be stale; the token endpoint is spared
    assert len(platform.requests("GET", DVR)) == 1


async def test_rejected_password_is_never_tried_again(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig, password="wrong-password")
    with pytest.raises(LoginRejected) as first:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert first.value.status == 403
    assert first.value.area == "auth"
    assert first.value.message == (
        "login rejected for 'ops@example.com'; not retrying until restart (Invalid credentials)"
    )
    for hours in (0, 1, 5):
        rig.clock.advance(hours * 3600)
        with pytest.raises(LoginRejected) as later:
            await DvrReader(rig.client).dvr_stream("acme", "live/main")
        assert later.value.message == first.value.message
        assert later.value is not first.value  # a fresh exception; tracebacks do not pile up
    assert platform.logins == 1
    assert platform.requests("GET", DVR) == []


async def test_rejection_on_renewal_stops_further_logins(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    rig = login(make_rig)
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    platform.password = "changed-in-the-portal"
    rig.clock.advance(LIFETIME)
    for _ in range(3):
        with pytest.raises(LoginRejected):
            await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert platform.logins == 2


async def test_rate_limited_token_endpoint_is_not_a_rejection(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    platform.login_answer = Answer(200, {"status": "error", "message": "Rate limit exceeded"})
    rig = login(make_rig)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert not isinstance(info.value, LoginRejected)
    assert (info.value.kind, info.value.message) == ("error_body", "Rate limit exceeded")
    platform.login_answer = None
    rig.clock.advance(10)
    assert await DvrReader(rig.client).dvr_stream("acme", "live/main") == []
    assert platform.logins == 2


async def test_failing_token_endpoint_is_not_retried_in_a_loop(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.login_answer = Answer(503, text="<html>busy</html>")
    rig = login(make_rig)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.status, info.value.area) == (503, "auth")
    with pytest.raises(UpstreamError, match="token endpoint asked too recently"):
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert platform.logins == 1  # the login POST is never retried, and never within 5 s
    rig.clock.advance(6)
    with pytest.raises(UpstreamError):
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert platform.logins == 2


async def test_token_reply_without_token_is_invalid(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.login_answer = Answer(200, {"status": 200, "token": ""})
    rig = login(make_rig)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.message) == (
        "invalid_body",
        "token reply.token: empty token",
    )
