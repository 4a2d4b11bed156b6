"""Tokens over HTTP: static and issued tokens, expiry, wrong passwords, the account list."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, TOKEN, Client, ClientFactory, iso

# One read per area, and the 403 body each area answers without a usable token.
AREA_READS = [
    (
        f"/app/metrics/v1/?account=demo-media&start={iso(T0 - 600)}&end={iso(T0 - 540)}",
        {"status": "error", "description": "Invalid token or no access"},
    ),
    (
        "/app/restream/v2/demo-media/resources",
        {"success": False, "code": 403, "message": "Invalid token"},
    ),
    (
        "/app/dvr-net/v1/demo-media/streams/live/main",
        {"status": "Forbidden", "description": "Invalid token"},
    ),
    (
        "/app/th-api/v1/accounts/demo-media/configurations",
        {"status": "ERROR", "message": "Invalid token"},
    ),
    ("/app/inventory/v1/accounts/", {"status": 403, "message": "Invalid token"}),
]


async def login(client: Client, username: str = "demo", password: str = "demo") -> tuple[int, Any]:
    resp = await client.post(
        "/app/oauth/v1/token/", data={"username": username, "password": password}
    )
    return resp.status, await resp.json()


@pytest.mark.parametrize(("path", "body"), AREA_READS)
async def test_wrong_token_gets_403_in_the_area_shape(
    anon: Client, path: str, body: dict[str, object]
) -> None:
    resp = await anon.get(path, headers={"CDN-AUTH-TOKEN": "not-a-token"})
    assert resp.status == 403
    assert await resp.json() == body


async def test_missing_token_gets_403(anon: Client) -> None:
    resp = await anon.get("/app/dvr-net/v1/demo-media/streams/news")
    assert resp.status == 403
    assert await resp.json() == {
        "status": "Forbidden",
        "description": "Missing CDN-AUTH-TOKEN header",
    }
    resp = await anon.get("/app/restream/v2/demo-media/status")
    assert await resp.json() == {
        "success": False,
        "code": 403,
        "message": "Missing CDN-AUTH-TOKEN header",
    }


@pytest.mark.parametrize(("path", "_body"), AREA_READS)
async def test_static_token_is_accepted_everywhere(
    client: Client, path: str, _body: object
) -> None:
    resp = await client.get(path)
    assert resp.status == 200


async def test_token_endpoint_issues_a_token_that_expires(
    aiohttp_client: ClientFactory, clock: FakeClock
) -> None:
    sim = Simulator(SimConfig(token_lifetime_seconds=300), clock)
    client = await aiohttp_client(sim.build_app())
    status, body = await login(client)
    assert status == 200
    assert body["person_id"] == 17
    assert body["status"] == 200
    assert body["lifetime"] == 300_000
    assert body["token"].startswith("cdn1_")
    header = {"CDN-AUTH-TOKEN": body["token"]}
    resp = await client.get("/app/dvr-net/v1/demo-media/streams/live/main", headers=header)
    assert resp.status == 200
    clock.advance(299)
    resp = await client.get("/app/dvr-net/v1/demo-media/streams/live/main", headers=header)
    assert resp.status == 200
    clock.advance(1)
    resp = await client.get("/app/dvr-net/v1/demo-media/streams/live/main", headers=header)
    assert resp.status == 403
    assert await resp.json() == {"status": "Forbidden", "description": "Token is expired"}
    resp = await client.get("/app/restream/v2/demo-media/status", headers=header)
    assert await resp.json() == {"success": False, "code": 403, "message": "Token is expired"}
    _, again = await login(client)
    assert again["token"] != body["token"]
    resp = await client.get(
        "/app/restream/v2/demo-media/status", headers={"CDN-AUTH-TOKEN": again["token"]}
    )
    assert resp.status == 200


async def test_token_endpoint_accepts_a_json_body(anon: Client) -> None:
    resp = await anon.post("/app/oauth/v1/token/", json={"username": "demo", "password": "demo"})
    assert resp.status == 200


async def test_wrong_password_is_refused_and_counted(anon: Client, sim: Simulator) -> None:
    status, body = await login(anon, password="guess")
    assert (status, body) == (403, {"status": 403, "message": "Invalid username or password"})
    assert sim.auth.failed_logins == 1
    logged = sim.requests.find(path="/app/oauth/v1/token/")[-1]
    assert logged.body == {"username": "demo", "password": "***"}


async def test_seven_wrong_passwords_lock_the_login(
    anon: Client, sim: Simulator, clock: FakeClock
) -> None:
    for _ in range(7):
        await login(anon, password="guess")
    status, body = await login(anon)
    assert (status, body) == (
        403,
        {"status": 403, "message": "Login is locked after too many failed attempts"},
    )
    clock.advance(3 * 3600)
    status, _ = await login(anon)
    assert status == 200


async def test_token_endpoint_limits_requests_per_minute(anon: Client, clock: FakeClock) -> None:
    for _ in range(20):
        assert (await login(anon))[0] == 200
    assert await login(anon) == (429, {"status": 429, "message": "Too many requests"})
    clock.advance(60)
    assert (await login(anon))[0] == 200


async def test_missing_login_fields_are_400(anon: Client) -> None:
    resp = await anon.post("/app/oauth/v1/token/", data={"username": "demo"})
    assert resp.status == 400
    assert await resp.json() == {"status": 400, "message": "username and password are required"}


async def test_refuse_password_fault_rejects_the_right_password(
    anon: Client, sim: Simulator
) -> None:
    sim.faults.set("auth", "refuse_password", count=1)
    status, body = await login(anon)
    assert (status, body) == (403, {"status": 403, "message": "Invalid username or password"})
    assert sim.auth.failed_logins == 1
    assert (await login(anon))[0] == 200


async def test_expire_all_tokens_now(anon: Client, sim: Simulator) -> None:
    _, body = await login(anon)
    header = {"CDN-AUTH-TOKEN": body["token"]}
    resp = await anon.post("/_sim/auth/expire")
    assert (await resp.json())["static_expired"] is False
    resp = await anon.get("/app/th-api/v1/accounts/demo-media/configurations", headers=header)
    assert resp.status == 403
    assert await resp.json() == {"status": "ERROR", "message": "Token is expired"}
    resp = await anon.get("/app/th-api/v1/accounts/demo-media/configurations", headers=TOKEN)
    assert resp.status == 200
    sim.expire_tokens(include_static=True)
    resp = await anon.get("/app/metrics/v1/?account=demo-media", headers=TOKEN)
    assert await resp.json() == {"status": "error", "description": "Token is expired"}
    await anon.post("/_sim/auth/reset")
    resp = await anon.get("/app/th-api/v1/accounts/demo-media/configurations", headers=TOKEN)
    assert resp.status == 200


async def test_account_list_names_every_account(client: Client, sim: Simulator) -> None:
    resp = await client.get("/app/inventory/v1/accounts/")
    body = await resp.json()
    assert [a["name"] for a in body] == ["demo-media", "demo-shop"]
    assert body[0] == {
        "status": "active",
        "utoken": sim.utoken("demo-media"),
        "uid": "1-1-demo-media",
        "name": "demo-media",
    }


async def test_custom_token_and_credentials(
    aiohttp_client: ClientFactory, clock: FakeClock
) -> None:
    sim = Simulator(SimConfig(token="t0k", username="ops", password="pw"), clock)
    client = await aiohttp_client(sim.build_app())
    resp = await client.get("/app/inventory/v1/accounts/", headers={"CDN-AUTH-TOKEN": "t0k"})
    assert resp.status == 200
    assert (await login(client))[0] == 403
    assert (await login(client, "ops", "pw"))[0] == 200
