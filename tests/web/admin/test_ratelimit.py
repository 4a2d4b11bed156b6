"""At most 10 generate requests a minute per account: the 11th is 429 and never sent."""

from __future__ import annotations

from .conftest import Admin
from .test_routes import GENERATE

GEN = "/talking-head/demo-media/generate"


def generates_sent(admin: Admin) -> int:
    """Generate requests that reached the platform (each accepted one also refreshes the
    quota with a configurations request)."""
    return sum(r.method == "POST" for r in admin.upstream.requests)


async def test_eleventh_generate_in_a_minute_is_refused_locally(admin: Admin) -> None:
    for _ in range(10):
        status, _, _ = await admin.call("POST", GEN, json=GENERATE)
        assert status == 202
        admin.clock.advance(1)
    status, data, resp = await admin.call("POST", GEN, json=GENERATE)
    assert status == 429
    assert data["error"] == "rate_limited"
    assert resp.headers["Retry-After"] == "50"
    assert generates_sent(admin) == 10


async def test_the_window_slides(admin: Admin) -> None:
    for _ in range(10):
        await admin.call("POST", GEN, json=GENERATE)
    admin.clock.advance(59)
    assert (await admin.call("POST", GEN, json=GENERATE))[0] == 429
    admin.clock.advance(1)
    assert (await admin.call("POST", GEN, json=GENERATE))[0] == 202
    assert generates_sent(admin) == 11


async def test_the_limit_is_per_account(admin: Admin) -> None:
    for _ in range(10):
        await admin.call("POST", GEN, json=GENERATE)
    status, _, _ = await admin.call("POST", "/talking-head/demo-shop/generate", json=GENERATE)
    assert status == 200  # the fake platform's default answer for demo-shop
    assert admin.upstream.requests[-1].path == "/app/th-api/v1/accounts/demo-shop/generate"


async def test_invalid_requests_do_not_use_up_the_limit(admin: Admin) -> None:
    for _ in range(20):
        assert (await admin.call("POST", GEN, json={"script": ""}))[0] == 422
    assert (await admin.call("POST", GEN, json=GENERATE))[0] == 202
