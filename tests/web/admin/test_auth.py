"""Bearer auth: 401 without or with an unknown token, 403 for a read token on a change."""

from __future__ import annotations

import hmac
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from exporter.web.admin import ROUTES, admin_app
from exporter.web.app import admin_deps
from exporter.web.auth import authenticate
from tests.rig.table import READ_TOKEN, WRITE_TOKEN

from .conftest import Admin, MakeAdmin


def concrete(path: str) -> str:
    return (
        path.replace("{account}", "demo-media")
        .replace("{resource_id}", "r1")
        .replace("{task_id}", "task-1")
        .replace("{stream_name:.+}", "live/main")
    )


@pytest.mark.parametrize("route", ROUTES, ids=[r.operation_id for r in ROUTES])
@pytest.mark.parametrize(
    "header", [None, "Bearer wrong-token", "Basic " + WRITE_TOKEN, "Bearer", WRITE_TOKEN]
)
async def test_missing_or_unknown_token_is_401(
    admin: Admin, route: Any, header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    status, data, resp = await admin.call(
        route.method, concrete(route.path), token=None, headers=headers, json={}
    )
    assert status == 401
    assert data["error"] == "unauthorized"
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert admin.upstream.requests == []


@pytest.mark.parametrize("route", [r for r in ROUTES if r.write], ids=lambda r: r.operation_id)
async def test_read_token_on_a_change_is_403(admin: Admin, route: Any) -> None:
    status, data, _ = await admin.call(
        route.method, concrete(route.path), token=READ_TOKEN, json={}
    )
    assert status == 403
    assert data["error"] == "forbidden"
    assert admin.upstream.requests == []


async def test_unknown_account_is_404_and_sends_nothing(admin: Admin) -> None:
    status, data, _ = await admin.call("GET", "/restream/someone-else/resources")
    assert status == 404
    assert data["error"] == "unknown_account"
    assert admin.upstream.requests == []


async def test_auth_comes_before_the_account_check(admin: Admin) -> None:
    status, _, _ = await admin.call("GET", "/restream/someone-else/resources", token=None)
    assert status == 401


async def test_openapi_needs_no_token(admin: Admin) -> None:
    status, data, _ = await admin.call("GET", "/openapi.json", token=None)
    assert status == 200
    assert data["openapi"].startswith("3.")


async def test_disabled_admin_serves_nothing(make_admin: MakeAdmin) -> None:
    admin = await make_admin(admin_enabled=False)
    status, data, _ = await admin.call("GET", "/restream/demo-media/resources")
    assert (status, data) == (404, "404: Not Found")  # the daemon mounts no admin API
    assert admin.upstream.requests == []
    # The admin app itself refuses too, should it be mounted anyway.
    app = admin_app(admin.ctx, admin_deps(admin.areas))
    async with TestClient(TestServer(app)) as client:
        resp = await client.get(
            "/restream/demo-media/resources", headers={"Authorization": f"Bearer {READ_TOKEN}"}
        )
        assert resp.status == 404
        assert (await resp.json())["error"] == "admin_disabled"
    assert admin.upstream.requests == []


def test_tokens_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert authenticate("Bearer " + WRITE_TOKEN, READ_TOKEN, WRITE_TOKEN) == "write"
    assert authenticate("bearer " + READ_TOKEN, READ_TOKEN, WRITE_TOKEN) == "read"
    assert authenticate("Bearer nope", READ_TOKEN, WRITE_TOKEN) is None
    # Both tokens are compared every time, whichever matches.
    assert len(calls) == 6


def test_an_empty_configured_token_never_matches() -> None:
    assert authenticate("Bearer ", "", "w") is None
    assert authenticate("Bearer x", "", "w") is None


def test_admin_cannot_be_enabled_without_a_write_token() -> None:
    from exporter.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"admin\.write_token"):
        parse_config(
            {"upstream": {"token": "t"}, "admin": {"enabled": True, "read_token": "r"}}, env={}
        )
    assert parse_config({"upstream": {"token": "t"}}, env={}).admin.enabled is False


async def test_repeated_401s_from_one_address_are_throttled(admin: Admin) -> None:
    path = "/restream/demo-media/resources"
    for _ in range(10):
        status, _, _ = await admin.call("GET", path, token="guess-0123456789")
        assert status == 401
    admin.clock.advance(20)
    status, data, resp = await admin.call("GET", path, token="guess-0123456789")
    assert (status, data["error"]) == (429, "rate_limited")
    assert resp.headers["Retry-After"] == "40"
    status, _, _ = await admin.call("GET", path, token="another-guess-0123")  # same address
    assert status == 429
    assert admin.upstream.requests == []
    admin.clock.advance(40)
    status, _, _ = await admin.call("GET", path, token="another-guess-0123")
    assert status == 401


async def test_successful_requests_are_never_throttled(admin: Admin) -> None:
    for _ in range(30):
        status, _, _ = await admin.call("GET", "/restream/demo-media/resources", token=READ_TOKEN)
        assert status == 200


async def test_a_missing_token_counts_as_a_failed_authentication(admin: Admin) -> None:
    path = "/restream/demo-media/resources"
    for _ in range(10):
        status, _, _ = await admin.call("GET", path, token=None)
        assert status == 401
    status, data, _ = await admin.call("GET", path, token=None)
    assert (status, data["error"]) == (429, "rate_limited")


async def test_auth_failures_per_minute_0_turns_the_throttle_off(make_admin: MakeAdmin) -> None:
    admin = await make_admin(auth_failures_per_minute=0)
    path = "/restream/demo-media/resources"
    for _ in range(30):
        status, data, _ = await admin.call("GET", path, token="guess-0123456789")
        assert (status, data["error"]) == (401, "unauthorized")
    status, _, _ = await admin.call("GET", path, token=READ_TOKEN)
    assert status == 200
