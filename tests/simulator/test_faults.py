"""Faults on demand, the control surface and the request log, over HTTP."""

from __future__ import annotations

import json
import time

import aiohttp
import pytest

from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, TOKEN, Client, iso

READS = {
    "traffic": f"/app/metrics/v1/?account=demo-media&start={iso(T0 - 600)}&end={iso(T0 - 540)}",
    "restream": "/app/restream/v2/demo-media/status",
    "dvr": "/app/dvr-net/v1/demo-media/streams/live/main",
    "talking_head": "/app/th-api/v1/accounts/demo-media/configurations",
    "inventory": "/app/inventory/v1/accounts/",
}
SHAPES = {
    "traffic": lambda code, msg: {"status": "error", "description": msg},
    "restream": lambda code, msg: {"success": False, "code": code, "message": msg},
    "dvr": lambda code, msg: {
        "status": {
            500: "Internal Server Error",
            503: "Service Unavailable",
            504: "Gateway Timeout",
        }[code],
        "description": msg,
    },
    "talking_head": lambda code, msg: {"status": "ERROR", "message": msg},
    "inventory": lambda code, msg: {"status": code, "message": msg},
}
MESSAGES = {
    500: "Internal server error",
    503: "Service unavailable",
    504: "Request execution timeout exceeded",
}


@pytest.mark.parametrize("area", list(READS))
@pytest.mark.parametrize("code", [500, 503, 504])
async def test_error_status_faults_use_the_area_shape(
    client: Client, sim: Simulator, area: str, code: int
) -> None:
    sim.faults.set(area, str(code), count=2)
    for _ in range(2):
        resp = await client.get(READS[area])
        assert resp.status == code
        assert await resp.json() == SHAPES[area](code, MESSAGES[code])
    resp = await client.get(READS[area])
    assert resp.status == 200
    assert sim.faults.active() == []


async def test_a_fault_touches_only_its_area(client: Client, sim: Simulator) -> None:
    sim.faults.set("dvr", "503")
    assert (await client.get(READS["dvr"])).status == 503
    assert (await client.get(READS["restream"])).status == 200
    assert (await client.get(READS["dvr"])).status == 503
    sim.faults.clear()
    assert (await client.get(READS["dvr"])).status == 200


async def test_all_areas_at_once_and_path_match(client: Client, sim: Simulator) -> None:
    sim.faults.set("*", "500")
    assert {(await client.get(p)).status for p in READS.values()} == {500}
    sim.faults.set("restream", "503", match="/history")
    assert (await client.get(READS["restream"])).status == 200
    resp = await client.get(
        "/app/restream/v2/demo-media/history",
        params={"resource_id": "1001", "start": iso(T0, "Z"), "end": iso(T0 + 60, "Z")},
    )
    assert resp.status == 503


async def test_faults_come_before_the_token_check(anon: Client, sim: Simulator) -> None:
    sim.faults.set("talking_head", "503")
    resp = await anon.get(READS["talking_head"])
    assert resp.status == 503


async def test_malformed_json_is_200_with_a_broken_body(client: Client, sim: Simulator) -> None:
    sim.faults.set("traffic", "malformed", count=1)
    resp = await client.get(READS["traffic"])
    assert resp.status == 200
    assert resp.content_type == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(await resp.text())


async def test_error_body_with_200(client: Client, sim: Simulator) -> None:
    sim.faults.set("restream", "error_200", count=1)
    resp = await client.get(READS["restream"])
    assert resp.status == 200
    assert await resp.json() == {"status": "error", "message": "Rate limit exceeded"}
    sim.faults.set("dvr", "error_200", body={"status": "error", "message": "Quota"})
    resp = await client.get(READS["dvr"])
    assert await resp.json() == {"status": "error", "message": "Quota"}


async def test_slow_fault_delays_then_answers(client: Client, sim: Simulator) -> None:
    sim.faults.set("dvr", "slow", count=1, delay=0.3)
    began = time.monotonic()
    resp = await client.get(READS["dvr"])
    assert time.monotonic() - began >= 0.3
    assert resp.status == 200
    assert (await resp.json())["status"] == "Completed"


async def test_connection_reset(client: Client, sim: Simulator) -> None:
    sim.faults.set("talking_head", "reset")  # clients retry idempotent requests once
    with pytest.raises(aiohttp.ClientConnectionError):
        await client.get(READS["talking_head"])
    sim.faults.clear("talking_head")
    assert (await client.get(READS["talking_head"])).status == 200


def test_fault_api_rejects_unknown_names(sim: Simulator) -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        sim.faults.set("traffic", "418")
    with pytest.raises(ValueError, match="unknown area"):
        sim.faults.set("billing", "500")
    with pytest.raises(ValueError, match="auth area only"):
        sim.faults.set("dvr", "refuse_password")


async def test_control_surface_sets_and_clears_faults_without_a_token(
    anon: Client, client: Client
) -> None:
    resp = await anon.post("/_sim/faults", json={"area": "traffic", "kind": "504", "count": 1})
    assert resp.status == 200
    (fault,) = await resp.json()
    assert fault["area"] == "traffic"
    assert fault["kind"] == "504"
    assert fault["remaining"] == 1
    assert (await client.get(READS["traffic"])).status == 504
    await anon.post("/_sim/faults", json={"area": "dvr", "kind": "500"})
    listed = await (await anon.get("/_sim/faults")).json()
    assert [f["area"] for f in listed] == ["dvr"]
    resp = await anon.delete("/_sim/faults", params={"area": "dvr"})
    assert await resp.json() == []
    resp = await anon.post("/_sim/faults", json={"area": "dvr", "kind": "teapot"})
    assert resp.status == 400
    assert "unknown fault kind" in (await resp.json())["error"]


async def test_request_log_records_what_upstream_received(client: Client, sim: Simulator) -> None:
    sim.requests.clear()
    await client.get(
        "/app/metrics/v1/resources",
        params=[
            ("account", "demo-media"),
            ("start", iso(T0 - 600)),
            ("end", iso(T0 - 540)),
            ("metric", "edge_bandwidth"),
            ("metric", "edge_status_5xx"),
        ],
    )
    await client.request(
        "DELETE",
        "/app/dvr-net/v1/demo-media/streams/live/main",
        json={"host": "*", "from_ts": T0 - 100, "duration_sec": 10},
    )
    first, second = sim.requests.all()
    assert first.method == "GET"
    assert first.path == "/app/metrics/v1/resources"
    assert first.params["metric"] == ["edge_bandwidth", "edge_status_5xx"]
    assert first.area == "traffic"
    assert first.token == "demo-token"
    assert second.body == {"host": "*", "from_ts": T0 - 100, "duration_sec": 10}
    logged = await (await client.get("/_sim/requests", params={"area": "dvr"})).json()
    assert [(r["method"], r["path"], r["body"]) for r in logged] == [
        ("DELETE", "/app/dvr-net/v1/demo-media/streams/live/main", second.body)
    ]
    await client.delete("/_sim/requests")
    assert len(sim.requests) == 0  # control routes are not logged


def test_request_log_is_bounded(clock: FakeClock) -> None:
    sim = Simulator(SimConfig(request_log_size=3), clock)
    assert sim.requests.all() == []
    from exporter.simulator.requests_log import RecordedRequest

    for i in range(5):
        sim.requests.append(RecordedRequest(i, "GET", f"/{i}", (), None, "x", None))
    assert [r.path for r in sim.requests] == ["/2", "/3", "/4"]


async def test_serve_on_a_real_socket_with_port_zero(sim: Simulator) -> None:
    runner = await serve(sim, "127.0.0.1", 0)
    try:
        assert runner.port > 0
        assert runner.base_url == f"http://127.0.0.1:{runner.port}"
        async with aiohttp.ClientSession(runner.base_url, headers=TOKEN) as session:
            async with session.get("/app/inventory/v1/accounts/") as resp:
                assert [a["name"] for a in await resp.json()] == ["demo-media", "demo-shop"]
            sim.faults.set("inventory", "reset")
            with pytest.raises(aiohttp.ClientConnectionError):
                await session.get("/app/inventory/v1/accounts/")
            async with session.get("/") as resp:
                assert (await resp.json())["control"] == "/_sim/"
    finally:
        await runner.cleanup()


async def test_unknown_paths_answer_json_in_the_area_shape(client: Client) -> None:
    resp = await client.get("/app/restream/v2/demo-media/nothing-here")
    assert resp.status == 404
    assert await resp.json() == {"success": False, "code": 404, "message": "Not Found"}
    resp = await client.post("/app/dvr-net/v1/demo-media/streams/news")
    assert resp.status == 405
    assert await resp.json() == {
        "status": "Method Not Allowed",
        "description": "Method Not Allowed",
    }


async def test_clock_control_moves_a_fake_clock(anon: Client, clock: FakeClock) -> None:
    resp = await anon.post("/_sim/clock", json={"advance": 90})
    assert (await resp.json())["now"] == T0 + 120
    assert clock.time() == T0 + 120


async def test_truth_route_gives_final_figures(anon: Client, sim: Simulator) -> None:
    resp = await anon.get("/_sim/traffic", params={"account": "demo-shop", "minute": iso(T0)})
    assert await resp.json() == sim.traffic_truth("demo-shop", T0)
