"""Restream over HTTP: CRUD, status codes over time, history consistent with status, forcing."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from exporter.simulator import Simulator
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, Client, iso

BASE = "/app/restream/v2/demo-media"
YOUTUBE = "rtmp://a.rtmp.youtube.com/live2"
NEW: dict[str, Any] = {
    "name": "Launch",
    "type": "short",
    "active": True,
    "restreams": [
        {
            "schedule": [],
            "source": "rtmp://publish.demo-media.example/live/launch",
            "transcoded": False,
            "transcode_quality": "",
            "target_type": "customRTMP",
            "target_url": "rtmp://live.example/app",
            "target_key": "launch-key",
            "login": "",
            "password": "",
            "backup": {},
        }
    ],
}


async def status_of(client: Client, rid: str) -> list[dict[str, Any]]:
    resp = await client.get(f"{BASE}/status", params={"resource_id": rid})
    body = await resp.json()
    assert body["account"] == "demo-media"
    (record,) = body["data"]
    assert record["resource_id"] == rid
    result: list[dict[str, Any]] = record["status"]
    return result


async def history_of(client: Client, rid: str, lo: float, hi: float) -> dict[str, Any]:
    resp = await client.get(
        f"{BASE}/history", params={"resource_id": rid, "start": iso(lo, "Z"), "end": iso(hi, "Z")}
    )
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


async def test_list_and_get_resources(client: Client, sim: Simulator) -> None:
    body = await (await client.get(f"{BASE}/resources")).json()
    assert body["account"] == "demo-media"
    resources = body["data"]["resources"]
    assert [r["resource_id"] for r in resources] == ["1001", "1002", "1003", "1004"]
    assert body["modification_ts"] == max(r["modification_ts"] for r in resources)
    first = resources[0]
    assert set(first) == {
        "resource_id",
        "name",
        "type",
        "active",
        "restreams",
        "creation_ts",
        "modification_ts",
    }
    assert first["type"] == "short"
    assert first["restreams"][0]["target_key"] == "yt-SECRET-KEY-1001"
    relay = resources[1]["restreams"][0]
    assert relay["target_url"] == (
        "rtmp://relay:url-SECRET-PASS-1002@relay.partner.example:1935/live"
    )
    assert relay["password"] == "pw-SECRET-PASS-1002"
    one = await (await client.get(f"{BASE}/resources/1002")).json()
    assert one["account"] == "demo-media"
    assert one["resource_id"] == "1002"
    assert one["modification_ts"] == resources[1]["modification_ts"]
    assert one["data"]["name"] == "Partner relay"
    assert "resource_id" not in one["data"]


async def test_unknown_client_and_resource_are_404(client: Client) -> None:
    resp = await client.get("/app/restream/v2/acme/resources")
    assert resp.status == 404
    assert await resp.json() == {"success": False, "code": 404, "message": "Client not found"}
    resp = await client.get(f"{BASE}/resources/999")
    assert await resp.json() == {"success": False, "code": 404, "message": "Resource 999 not found"}
    resp = await client.get(f"{BASE}/status", params={"resource_id": "999"})
    assert resp.status == 404


async def test_create_assigns_an_id_and_timestamps(client: Client, clock: FakeClock) -> None:
    resp = await client.post(f"{BASE}/resources", json=NEW)
    body = await resp.json()
    assert body == {
        "success": True,
        "code": 200,
        "message": "Resource created",
        "resource_id": "1005",
    }
    got = await (await client.get(f"{BASE}/resources/1005")).json()
    assert got["data"]["creation_ts"] == int(clock.time())
    assert got["data"]["modification_ts"] == int(clock.time())
    assert got["data"]["restreams"] == NEW["restreams"]
    status = await status_of(client, "1005")
    assert status[0]["target_key"] == "launch-key"
    assert status[0]["status"]["code"] in (0, 2, 3)


async def test_create_fills_optional_entry_fields(client: Client) -> None:
    minimal = {
        "name": "Min",
        "type": "short",
        "active": False,
        "restreams": [{"source": "rtmp://s/x", "target_url": "rtmp://t/y"}],
    }
    rid = (await (await client.post(f"{BASE}/resources", json=minimal)).json())["resource_id"]
    got = await (await client.get(f"{BASE}/resources/{rid}")).json()
    assert got["data"]["restreams"][0] == {
        "schedule": [],
        "source": "rtmp://s/x",
        "transcoded": False,
        "transcode_quality": "",
        "target_type": "customRTMP",
        "target_url": "rtmp://t/y",
        "target_key": "",
        "login": "",
        "password": "",
        "backup": {},
    }
    assert (await status_of(client, rid))[0]["status"] == {
        "code": 7,
        "description": "Restream stopped",
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": None}, "Field 'name' is required"),
        ({"active": "yes"}, "Field 'active' must be a boolean"),
        ({"restreams": "x"}, "Field 'restreams' must be an array"),
        ({"restreams": [{"source": "rtmp://s"}]}, "Field 'restreams[0].target_url' is required"),
        (
            {"restreams": [{"source": "s", "target_url": "t", "schedule": [{"start": "now"}]}]},
            "Field 'restreams[0].schedule[0].stop' is required",
        ),
    ],
)
async def test_invalid_bodies_are_400_naming_the_field(
    client: Client, change: dict[str, Any], message: str
) -> None:
    body = {k: v for k, v in {**NEW, **change}.items() if v is not None}
    for method, path in (("POST", f"{BASE}/resources"), ("PUT", f"{BASE}/resources/1001")):
        resp = await client.request(method, path, json=body)
        assert resp.status == 400
        assert await resp.json() == {"success": False, "code": 400, "message": message}


async def test_non_json_body_is_400(client: Client) -> None:
    resp = await client.post(f"{BASE}/resources", data=b"{not json")
    assert await resp.json() == {
        "success": False,
        "code": 400,
        "message": "Request body must be valid JSON",
    }


async def test_put_replaces_and_keeps_creation_ts(client: Client, clock: FakeClock) -> None:
    before = (await (await client.get(f"{BASE}/resources/1001")).json())["data"]
    clock.advance(120)
    resp = await client.put(f"{BASE}/resources/1001", json={**NEW, "active": False})
    assert await resp.json() == {"success": True, "code": 200, "message": "Resource updated"}
    after = (await (await client.get(f"{BASE}/resources/1001")).json())["data"]
    assert after["creation_ts"] == before["creation_ts"]
    assert after["modification_ts"] == int(clock.time())
    assert after["name"] == "Launch"
    assert [e["target_key"] for e in after["restreams"]] == ["launch-key"]
    status = await status_of(client, "1001")
    assert [s["status"]["code"] for s in status] == [7]
    resp = await client.put(f"{BASE}/resources/4242", json=NEW)
    assert resp.status == 404


async def test_inactive_resource_reports_restream_stopped(client: Client) -> None:
    status = await status_of(client, "1004")
    assert status[0]["status"] == {"code": 7, "description": "Restream stopped"}


async def test_schedule_decides_when_a_restream_runs(client: Client, clock: FakeClock) -> None:
    # demo schedule: daily 18:00-20:00 UTC from the day before the simulator started
    stopped = await status_of(client, "1003")  # 17:00:30, yesterday's window is over
    assert stopped[0]["status"] == {"code": 7, "description": "Restream stopped"}
    clock.set(T0 + 3600 + 60)  # 18:01
    assert (await status_of(client, "1003"))[0]["status"]["code"] in (0, 2, 3)
    clock.set(T0 + 30 * 86400)  # after the last window
    assert (await status_of(client, "1003"))[0]["status"]["code"] == 7


async def test_schedule_in_the_future_reports_no_status_changes(client: Client) -> None:
    window = {"start": iso(T0 + 3600, "Z"), "stop": iso(T0 + 7200, "Z")}
    entry = {**NEW["restreams"][0], "schedule": [window]}
    body = {**NEW, "restreams": [entry]}
    rid = (await (await client.post(f"{BASE}/resources", json=body)).json())["resource_id"]
    assert (await status_of(client, rid))[0]["status"] == {
        "code": 5,
        "description": "No status changes found",
    }


async def test_status_lists_every_resource(client: Client) -> None:
    body = await (await client.get(f"{BASE}/status")).json()
    assert [r["resource_id"] for r in body["data"]] == ["1001", "1002", "1003", "1004"]
    entry = body["data"][0]["status"][1]
    assert set(entry) == {"status", "source", "target_url", "target_key"}
    assert entry["target_url"] == "rtmp://live.twitch.tv/app"


async def test_codes_change_over_time(client: Client, clock: FakeClock) -> None:
    codes: set[int] = set()
    for _ in range(24 * 6):
        clock.advance(600)
        codes.update(s["status"]["code"] for s in await status_of(client, "1001"))
    assert codes >= {0, 3}
    assert codes <= {0, 2, 3}


async def test_history_agrees_with_status(client: Client, clock: FakeClock) -> None:
    lo, hi = T0 - 2 * 86400, T0
    body = await history_of(client, "1001", lo, hi)
    assert body["start"] == iso(lo)
    assert body["end"] == iso(hi)
    assert body["resource_id"] == "1001"
    (item,) = body["data"]
    assert item["source"] == "rtmp://publish.demo-media.example/live/main"
    points = item["history"][YOUTUBE]["yt-SECRET-KEY-1001"]
    assert len(points) >= 2
    times = [p["time"] for p in points]
    assert times == sorted(times)
    assert all(lo <= t <= hi for t in times)
    assert all(a["code"] != b["code"] for a, b in itertools.pairwise(points))
    for before, after in itertools.pairwise(points):
        for t in (before["time"], (before["time"] + after["time"]) // 2, after["time"] - 1):
            clock.set(t)
            status = await status_of(client, "1001")
            assert status[0]["status"]["code"] == before["code"], t
    clock.set(points[-1]["time"])
    assert (await status_of(client, "1001"))[0]["status"]["code"] == points[-1]["code"]


async def test_forced_code_shows_in_status_and_history(
    client: Client, anon: Client, sim: Simulator, clock: FakeClock
) -> None:
    forced_at = int(clock.time())
    sim.force_restream_status("demo-media", "1001", YOUTUBE, 11, "Target rejected the key")
    status = await status_of(client, "1001")
    assert status[0]["status"] == {"code": 11, "description": "Target rejected the key"}
    assert status[1]["status"]["code"] in (0, 2, 3)  # the Twitch target is untouched
    clock.advance(300)
    body = await history_of(client, "1001", forced_at - 10, clock.time())
    points = body["data"][0]["history"][YOUTUBE]["yt-SECRET-KEY-1001"]
    assert {"code": 11, "description": "Target rejected the key", "time": forced_at} in points
    resp = await anon.delete("/_sim/restream/demo-media/1001/force", params={"target_url": YOUTUBE})
    assert resp.status == 200
    assert (await status_of(client, "1001"))[0]["status"]["code"] in (0, 2, 3)
    resp = await anon.post(
        "/_sim/restream/demo-media/1002/force",
        json={
            "target_url": "rtmp://relay:url-SECRET-PASS-1002@relay.partner.example:1935/live",
            "code": 2,
        },
    )
    assert resp.status == 200
    assert (await status_of(client, "1002"))[0]["status"] == {
        "code": 2,
        "description": "Source stream not found",
    }
    resp = await anon.post(
        "/_sim/restream/demo-media/1002/force", json={"target_url": "rtmp://nowhere", "code": 2}
    )
    assert resp.status == 404


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"start": iso(T0, "Z"), "end": iso(T0, "Z")}, "Parameter 'resource_id' is required"),
        ({"resource_id": "1001", "end": iso(T0, "Z")}, "Parameter 'start' is required"),
        (
            {"resource_id": "1001", "start": "2026-01-01", "end": iso(T0, "Z")},
            "Parameters 'start' and 'end' must be YYYY-mm-ddTHH:MM:SSZ",
        ),
        (
            {"resource_id": "1001", "start": iso(T0, "Z"), "end": iso(T0 - 60, "Z")},
            "Parameter 'end' must not be before 'start'",
        ),
    ],
)
async def test_history_validation(client: Client, params: dict[str, str], message: str) -> None:
    resp = await client.get(f"{BASE}/history", params=params)
    assert resp.status == 400
    assert await resp.json() == {"success": False, "code": 400, "message": message}


async def test_reset_lifts_forced_codes(client: Client, anon: Client, sim: Simulator) -> None:
    sim.force_restream_status("demo-media", "1001", YOUTUBE, 11)
    forced = await status_of(client, "1001")
    assert forced[0]["status"] == {"code": 11, "description": "Unknown status"}
    resp = await anon.post("/_sim/reset")
    assert (await resp.json())["faults"] == []
    assert (await status_of(client, "1001"))[0]["status"]["code"] in (0, 2, 3)
