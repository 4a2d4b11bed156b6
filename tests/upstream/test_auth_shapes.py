"""Auth as the real platform answers it, against the simulator with each auth quirk on."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from exporter.dvr.reply import DvrReader
from exporter.simulator.auth import TokenProblem
from exporter.upstream import LoginRejected, UpstreamError
from exporter.upstream.auth import MIN_TOKEN_AGE_FOR_RENEWAL, RENEW_AT_FRACTION
from exporter.upstream.errors import says_token_refused
from tests.rig.client import DVR_MAIN, MakeShapeRig, ShapeRig


async def test_auth_token_field_and_cdn2_prefix_log_in_and_lifetime_is_milliseconds(
    make_sim_rig: MakeShapeRig,
) -> None:
    r = await make_sim_rig(("auth-token-field", "cdn2-prefix"), token_lifetime_seconds=600)
    await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert len(r.logins()) == 1
    (read,) = r.sent(DVR_MAIN)
    assert read.token is not None
    assert read.token.startswith("cdn2_")
    # lifetime 600000 ms: renewed after 80 % of 600 s, not of 600000 s (nor before)
    r.clock.advance(600 * RENEW_AT_FRACTION - 1)
    await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert len(r.logins()) == 1
    r.clock.advance(2)
    await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert len(r.logins()) == 2
    tokens = [q.token for q in r.sent(DVR_MAIN)]
    assert tokens[0] == tokens[1] != tokens[2]
    assert all(t and t.startswith("cdn2_") for t in tokens)


@pytest.mark.parametrize("quirk", ["token-status-body", "empty-401"])
async def test_refused_login_is_never_retried(make_sim_rig: MakeShapeRig, quirk: str) -> None:
    r = await make_sim_rig((quirk,), upstream={"password": "wrong"})
    with pytest.raises(LoginRejected) as first:
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert first.value.status == (403 if quirk == "token-status-body" else 401)
    for _ in range(3):
        r.clock.advance(3600)
        with pytest.raises(LoginRejected):
            await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert len(r.logins()) == 1  # seven failures would lock the login for hours
    assert r.sim.auth.failed_logins == 1
    assert r.sent(DVR_MAIN) == []
    code = "error_body" if quirk == "token-status-body" else "401"
    assert r.sample("cdnvideo_upstream_requests_total", area="auth", code=code) == 1


async def read_once_then_wait(make_sim_rig: MakeShapeRig, quirk: str) -> ShapeRig:
    """Logged in with ``quirk`` on, one read done, the token old enough to be renewed."""
    r = await make_sim_rig((quirk,))
    await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    r.clock.advance(MIN_TOKEN_AGE_FOR_RENEWAL + 1)
    return r


@pytest.mark.parametrize("quirk", ["empty-401", "token-invalid-403"])
async def test_refused_token_is_renewed_once_and_the_request_retried(
    make_sim_rig: MakeShapeRig, quirk: str
) -> None:
    r = await read_once_then_wait(make_sim_rig, quirk)
    r.sim.expire_tokens()
    nodes = await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert nodes  # the retry succeeded
    assert len(r.logins()) == 2
    first, refused, retried = (q.token for q in r.sent(DVR_MAIN))
    assert first == refused != retried
    code = "401" if quirk == "empty-401" else "403"
    assert r.sample("cdnvideo_upstream_requests_total", area="dvr", code=code) == 1


@pytest.mark.parametrize("quirk", ["empty-401", "token-invalid-403"])
async def test_a_token_refused_again_after_renewal_fails_without_a_loop(
    make_sim_rig: MakeShapeRig, quirk: str
) -> None:
    r = await read_once_then_wait(make_sim_rig, quirk)
    r.sim.auth.check = lambda token: TokenProblem.INVALID  # type: ignore[method-assign]
    with pytest.raises(UpstreamError) as info:
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert info.value.status == (401 if quirk == "empty-401" else 403)
    assert len(r.logins()) == 2  # one renewal
    assert len(r.sent(DVR_MAIN)) == 3  # the first read, the refused one, one retry
    # a token under MIN_TOKEN_AGE_FOR_RENEWAL old is not renewed again
    with pytest.raises(UpstreamError):
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert len(r.logins()) == 2
    assert len(r.sent(DVR_MAIN)) == 4


@pytest.mark.parametrize("quirk", ["empty-401", "token-invalid-403"])
async def test_refused_static_token_sets_up_0_and_logs_one_line(
    make_sim_rig: MakeShapeRig, quirk: str
) -> None:
    r = await make_sim_rig((quirk,), login=False)
    r.sim.expire_tokens(include_static=True)

    async def poll() -> None:
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")

    with capture_logs() as logs:
        for _ in range(3):
            assert not await r.runner.run("dvr", "demo-media", poll)
            r.clock.advance(60)
    assert r.sample("cdnvideo_up", account="demo-media", area="dvr") == 0
    rejected = [e for e in logs if e["event"] == "upstream_token_rejected"]
    assert len(rejected) == 1
    assert rejected[0]["log_level"] == "error"
    assert r.sim.token not in str(logs)
    assert len(r.sent(DVR_MAIN)) == 3  # one request per poll, never a loop
    assert r.logins() == []

    r.sim.auth.reset()  # the operator fixed the token at the platform
    with capture_logs() as logs:
        assert await r.runner.run("dvr", "demo-media", poll)
    assert r.sample("cdnvideo_up", account="demo-media", area="dvr") == 1
    assert [e["event"] for e in logs if "token" in e["event"]] == ["upstream_token_accepted"]


@pytest.mark.parametrize(
    ("status", "message", "refused"),
    [
        (401, None, True),
        (401, "whatever", True),
        (403, "Token is expired", True),
        (403, "Invalid token or no access", True),
        (403, None, False),  # a bare 403 says nothing about the token
        (403, "Forbidden", False),
        (404, "Invalid token", False),
    ],
)
def test_which_answers_refuse_the_token(status: int, message: str | None, refused: bool) -> None:
    assert says_token_refused(status, message) is refused
