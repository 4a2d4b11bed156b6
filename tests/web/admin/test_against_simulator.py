"""The admin surface against the platform simulator over real HTTP, on a fake clock."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.support.logs import MASK
from exporter.talking_head.tasks import TaskTracker
from tests.simulator.hold import Hold, serve_held

from .conftest import Admin, MakeAdmin

RS = "/app/restream/v2/demo-media"
MASK_RX = r"\*{8}#[0-9a-f]{12}"
TH = "/app/th-api/v1/accounts/demo-media"
DVR = "/app/dvr-net/v1/demo-media/streams"
SAFETY_SECONDS = 60  # only a broken build waits so long: the test fails instead of hanging
GENERATE = {
    "script": "Good morning, this is a test of the admin surface.",
    "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
    "voice": "Alena",
    "emotion": "good",
    "background": "office",
    "video_name": "admin test",
    "composition": {"orientation": "horizontal", "scale": 1, "crop": 1, "shift": 0},
}


class SimAdmin:
    def __init__(self, admin: Admin, sim: Simulator) -> None:
        self.admin = admin
        self.sim = sim

    def last(self) -> Any:
        last = self.sim.requests.last
        assert last is not None
        return last

    def count(self) -> int:
        return len(self.sim.requests)


@pytest.fixture
async def sim_admin(make_admin: MakeAdmin) -> AsyncIterator[SimAdmin]:
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    runner = await serve(sim, "127.0.0.1", 0)
    try:
        admin = await make_admin(base_url=runner.base_url, token=sim.token, clock=clock)
        yield SimAdmin(admin, sim)
    finally:
        await runner.cleanup()


async def first_resource_id(s: SimAdmin) -> str:
    status, data, _ = await s.admin.call("GET", "/restream/demo-media/resources")
    assert status == 200, data
    return str(data["data"]["resources"][0]["resource_id"])


async def test_restream_routes_reach_the_platform_as_sent(sim_admin: SimAdmin) -> None:
    s = sim_admin
    rid = await first_resource_id(s)
    assert (s.last().method, s.last().path) == ("GET", f"{RS}/resources")

    status, data, _ = await s.admin.call("GET", f"/restream/demo-media/resources/{rid}")
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("GET", f"{RS}/resources/{rid}")

    body = {
        "name": "admin-created",
        "type": "short",
        "active": False,
        "restreams": [
            {
                "schedule": [{"start": "2026-01-02T10:00:00Z", "stop": "2026-01-02T11:00:00Z"}],
                "source": "rtmp://origin.example/live/admin",
                "transcoded": False,
                "transcode_quality": "",
                "target_type": "customRTMP",
                "target_url": "rtmp://a.rtmp.youtube.com/live2",
                "target_key": "created-key-secret",
                "login": "",
                "password": "",
                "backup": {},
            }
        ],
    }
    status, data, _ = await s.admin.call("POST", "/restream/demo-media/resources", json=body)
    assert status == 200, data
    assert (s.last().method, s.last().path, s.last().body) == ("POST", f"{RS}/resources", body)
    new_id = str(data["resource_id"])
    assert s.sim.restream.resources["demo-media"][new_id].body["restreams"][0]["target_key"] == (
        "created-key-secret"
    )

    status, data, _ = await s.admin.call("GET", f"/restream/demo-media/status?resource_id={rid}")
    assert status == 200, data
    assert (s.last().path, s.last().query) == (f"{RS}/status", (("resource_id", rid),))
    status, _, _ = await s.admin.call("GET", "/restream/demo-media/status")
    assert (status, s.last().query) == (200, ())

    q = f"resource_id={rid}&start=2026-01-01T00:00:00Z&end=2026-01-01T01:00:00Z"
    status, data, _ = await s.admin.call("GET", f"/restream/demo-media/history?{q}")
    assert status == 200, data
    assert s.last().query == (
        ("resource_id", rid),
        ("start", "2026-01-01T00:00:00Z"),
        ("end", "2026-01-01T01:00:00Z"),
    )


async def test_put_of_a_masked_read_keeps_the_platforms_secrets(sim_admin: SimAdmin) -> None:
    s = sim_admin
    rid = await first_resource_id(s)
    stored = copy.deepcopy(s.sim.restream.resources["demo-media"][rid].body)
    _, current, _ = await s.admin.call("GET", f"/restream/demo-media/resources/{rid}")
    shown = json.dumps(current)
    for entry in stored["restreams"]:
        if entry.get("target_key"):
            assert entry["target_key"] not in shown
        if entry.get("password"):
            assert entry["password"] not in shown
    body = copy.deepcopy(current["data"])
    body["name"] = "renamed through admin"
    assert MASK in json.dumps(body)
    status, data, _ = await s.admin.call("PUT", f"/restream/demo-media/resources/{rid}", json=body)
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("PUT", f"{RS}/resources/{rid}")
    after = s.sim.restream.resources["demo-media"][rid].body
    assert after["name"] == "renamed through admin"
    assert after["restreams"] == stored["restreams"]
    assert MASK not in json.dumps(s.last().body)


def youtube_entry(key: str, password: str) -> dict[str, Any]:
    return {
        "schedule": [],
        "source": "rtmp://origin.example/live/main",
        "transcoded": False,
        "transcode_quality": "",
        "target_type": "youtube",
        "target_url": "rtmp://a.rtmp.youtube.com/live2",
        "target_key": key,
        "login": "",
        "password": password,
        "backup": {},
    }


async def two_channel_resource(s: SimAdmin) -> str:
    body = {
        "name": "two channels",
        "type": "short",
        "active": True,
        "restreams": [
            youtube_entry("channel-a-key-1111", "pw-a-1111"),
            youtube_entry("channel-b-key-2222", "pw-b-2222"),
        ],
    }
    status, data, _ = await s.admin.call("POST", "/restream/demo-media/resources", json=body)
    assert status == 200, data
    return str(data["resource_id"])


async def masked_copy(s: SimAdmin, rid: str) -> Any:
    status, current, _ = await s.admin.call("GET", f"/restream/demo-media/resources/{rid}")
    assert status == 200, current
    return copy.deepcopy(current["data"])


async def test_a_round_trip_of_two_channels_on_one_ingest_url_keeps_each_key(
    sim_admin: SimAdmin,
) -> None:
    s = sim_admin
    rid = await two_channel_resource(s)
    body = await masked_copy(s, rid)
    body["name"] = "two channels, renamed"
    status, data, _ = await s.admin.call("PUT", f"/restream/demo-media/resources/{rid}", json=body)
    assert status == 200, data
    after = s.sim.restream.resources["demo-media"][rid].body["restreams"]
    assert [(e["target_key"], e["password"]) for e in after] == [
        ("channel-a-key-1111", "pw-a-1111"),
        ("channel-b-key-2222", "pw-b-2222"),
    ]


async def test_an_unmatched_mask_is_422_naming_the_entry_and_nothing_is_written(
    sim_admin: SimAdmin,
) -> None:
    s = sim_admin
    rid = await two_channel_resource(s)
    body = await masked_copy(s, rid)
    body["restreams"][1]["target_key"] = f"{MASK}#ffffffffffff"
    s.sim.requests.clear()
    status, data, _ = await s.admin.call("PUT", f"/restream/demo-media/resources/{rid}", json=body)
    assert status == 422
    assert [f["field"] for f in data["fields"]] == ["restreams[1].target_key"]
    assert f"resource {rid}" in data["fields"][0]["message"]
    assert [(r.method, r.path) for r in s.sim.requests] == [("GET", f"{RS}/resources/{rid}")]


# --- a mask is put back only into the slot it was read from ------------------------------------
async def refused_put(s: SimAdmin, rid: str, body: Any) -> list[str]:
    """PUT ``body``: must be 422 with nothing written; the fields it names."""
    before = copy.deepcopy(s.sim.restream.resources["demo-media"][rid].body)
    s.sim.requests.clear()
    status, data, _ = await s.admin.call("PUT", f"/restream/demo-media/resources/{rid}", json=body)
    assert status == 422, data
    assert [(r.method, r.path) for r in s.sim.requests] == [("GET", f"{RS}/resources/{rid}")]
    assert s.sim.restream.resources["demo-media"][rid].body == before
    return [f["field"] for f in data["fields"]]


async def test_a_mask_moved_to_another_entrys_key_is_refused(sim_admin: SimAdmin) -> None:
    body = await masked_copy(sim_admin, "1001")
    youtube_key = body["restreams"][0]["target_key"]  # twitch's entry is on another host
    body["restreams"][1]["target_key"] = youtube_key
    assert await refused_put(sim_admin, "1001", body) == ["restreams[1].target_key"]


async def test_a_mask_moved_to_a_url_password_of_another_host_is_refused(
    sim_admin: SimAdmin,
) -> None:
    body = await masked_copy(sim_admin, "1001")
    youtube_key = body["restreams"][0]["target_key"]
    body["restreams"][0]["target_url"] = f"rtmp://me:{youtube_key}@attacker.example/live2"
    stolen = {**body["restreams"][0], "target_url": "rtmp://attacker.example/app"}
    body["restreams"].append({**stolen, "target_key": youtube_key, "backup": {}})
    fields = await refused_put(sim_admin, "1001", body)
    assert fields == [
        "restreams[0].target_url",
        "restreams[0].target_key",
        "restreams[2].target_key",
    ]


async def test_secrets_in_url_queries_are_masked_and_kept_by_a_round_trip(
    sim_admin: SimAdmin,
) -> None:
    s = sim_admin
    stored = copy.deepcopy(s.sim.restream.resources["demo-media"]["1002"].body)
    body = await masked_copy(s, "1002")
    assert "SECRET" not in json.dumps(body)
    srt, token = body["restreams"][1]["target_url"], body["restreams"][2]["target_url"]
    assert re.fullmatch(
        rf"srt://srt\.partner\.example:9000\?streamid={MASK_RX}&passphrase={MASK_RX}&latency=2000",
        srt,
    )
    assert re.fullmatch(rf"rtmp://ingest\.partner\.example/app\?token={MASK_RX}", token)
    body["name"] = "relay, renamed"
    status, data, _ = await s.admin.call("PUT", "/restream/demo-media/resources/1002", json=body)
    assert status == 200, data
    after = s.sim.restream.resources["demo-media"]["1002"].body
    assert (after["name"], after["restreams"]) == ("relay, renamed", stored["restreams"])
    # The SRT passphrase's mask in the token slot of the other ingest is refused.
    passphrase = srt.split("passphrase=")[1].split("&")[0]
    body["restreams"][2]["target_url"] = f"rtmp://ingest.partner.example/app?token={passphrase}"
    assert await refused_put(s, "1002", body) == ["restreams[2].target_url"]


async def test_dvr_routes_reach_the_platform_as_sent(sim_admin: SimAdmin) -> None:
    s = sim_admin
    status, data, _ = await s.admin.call("GET", "/dvr/demo-media/streams/live/main")
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("GET", f"{DVR}/live/main")
    host = data["data"][0]["host"]
    start = int(s.sim.clock.time()) - 600
    ranged = {"host": host, "from_ts": start, "duration_sec": 60}
    status, data, _ = await s.admin.call("DELETE", "/dvr/demo-media/streams/live/main", json=ranged)
    assert status == 200, data
    assert (s.last().method, s.last().path, s.last().body) == ("DELETE", f"{DVR}/live/main", ranged)
    everything = {"host": "*", "all": True}
    status, data, _ = await s.admin.call("DELETE", "/dvr/demo-media/streams/news", json=everything)
    assert status == 200, data
    assert (s.last().path, s.last().body) == (f"{DVR}/news", everything)
    _, data, _ = await s.admin.call("GET", "/dvr/demo-media/streams/news")
    assert all(node["dvr"]["ranges"] == [] for node in data["data"])


async def test_talking_head_routes_and_task_tracking_to_the_end(sim_admin: SimAdmin) -> None:
    s = sim_admin
    status, data, _ = await s.admin.call("GET", "/talking-head/demo-media/configurations")
    assert status == 200, data
    assert s.last().path == f"{TH}/configurations"

    status, data, _ = await s.admin.call("POST", "/talking-head/demo-media/generate", json=GENERATE)
    assert status == 202, data
    assert (s.last().method, s.last().path, s.last().body) == ("POST", f"{TH}/generate", GENERATE)
    task_id = data["id"]
    tracker: TaskTracker = s.admin.tracker
    assert tracker.counts("demo-media")["in_queue"] == 1

    seen = []
    for _ in range(40):
        s.admin.clock.advance(5)
        await tracker.poll_due()
        seen.append(dict(tracker.counts("demo-media")))
        if not tracker.following():
            break
    assert tracker.counts("demo-media") == {
        "in_queue": 0,
        "processing": 0,
        "processed": 1,
        "canceled": 0,
    }
    assert any(c["processing"] == 1 for c in seen)
    polls = s.sim.requests.find(method="GET", path=f"{TH}/status/{task_id}")
    assert 2 <= len(polls) <= 6  # backoff, not a poll every 5 s

    status, data, _ = await s.admin.call("GET", f"/talking-head/demo-media/status/{task_id}")
    assert status == 200, data
    assert data["task"]["status"].lower() == "processed"
    status, data, _ = await s.admin.call("GET", f"/talking-head/demo-media/video/{task_id}")
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("GET", f"{TH}/video/{task_id}")
    # The link is the answer: its signature stays usable (bound to the exporter's address).
    assert re.search(r"\?expires=[0-9]+&ip=[^&]+&sig=[0-9a-f]{16}$", data["url"]), data
    status, data, _ = await s.admin.call(
        "PATCH", f"/talking-head/demo-media/video/{task_id}", json={"video_name": "renamed"}
    )
    assert status == 200, data
    assert (s.last().method, s.last().body) == ("PATCH", {"video_name": "renamed"})
    status, data, _ = await s.admin.call(
        "GET", f"/talking-head/demo-media/tasks?fields=video_name&sort=-date&limit=5&id={task_id}"
    )
    assert status == 200, data
    assert s.last().query == (
        ("fields", "video_name"),
        ("sort", "-date"),
        ("limit", "5"),
        ("id", task_id),
    )
    assert [v["video_name"] for v in data] == ["renamed"]
    status, data, _ = await s.admin.call("DELETE", f"/talking-head/demo-media/video/{task_id}")
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("DELETE", f"{TH}/video/{task_id}")


async def test_cancel_is_followed_to_canceled_and_a_second_cancel_passes_the_error_on(
    sim_admin: SimAdmin,
) -> None:
    s = sim_admin
    _, data, _ = await s.admin.call("POST", "/talking-head/demo-media/generate", json=GENERATE)
    task_id = data["id"]
    status, data, _ = await s.admin.call("DELETE", f"/talking-head/demo-media/cancel/{task_id}")
    assert status == 200, data
    assert (s.last().method, s.last().path) == ("DELETE", f"{TH}/cancel/{task_id}")
    status, again, resp = await s.admin.call("DELETE", f"/talking-head/demo-media/cancel/{task_id}")
    assert status >= 400
    assert resp.headers["X-Upstream-Status"] == str(status)
    assert "status" in json.dumps(again).lower()
    tracker: TaskTracker = s.admin.tracker
    s.admin.clock.advance(10)
    await tracker.poll_due()
    assert tracker.counts("demo-media")["canceled"] == 1
    assert tracker.following() == []


async def test_a_cancelled_and_deleted_video_ends_as_canceled_not_unknown(
    sim_admin: SimAdmin,
) -> None:
    s = sim_admin
    _, data, _ = await s.admin.call("POST", "/talking-head/demo-media/generate", json=GENERATE)
    task_id = data["id"]
    status, data, _ = await s.admin.call("DELETE", f"/talking-head/demo-media/cancel/{task_id}")
    assert status == 200, data
    status, data, _ = await s.admin.call("DELETE", f"/talking-head/demo-media/video/{task_id}")
    assert status == 200, data
    tracker: TaskTracker = s.admin.tracker
    for _ in range(10):
        s.admin.clock.advance(600)
        await tracker.poll_due()
    assert tracker.following() == []
    assert tracker.counts("demo-media") == {
        "in_queue": 0,
        "processing": 0,
        "processed": 0,
        "canceled": 1,
    }
    assert s.sim.requests.find(method="GET", path=f"{TH}/status/{task_id}") == []


async def test_local_rate_limit_stops_the_eleventh_generate(sim_admin: SimAdmin) -> None:
    s = sim_admin
    for _ in range(10):
        status, data, _ = await s.admin.call(
            "POST", "/talking-head/demo-media/generate", json=GENERATE
        )
        assert status == 202, data
    await s.admin.settle()  # each accepted generate refreshes the quota
    before = s.count()
    status, data, resp = await s.admin.call(
        "POST", "/talking-head/demo-media/generate", json=GENERATE
    )
    assert status == 429
    assert int(resp.headers["Retry-After"]) >= 1
    assert s.count() == before


async def test_validation_failure_sends_nothing_to_the_platform(sim_admin: SimAdmin) -> None:
    s = sim_admin
    bad = dict(GENERATE, video_name="x" * 36)
    status, data, _ = await s.admin.call("POST", "/talking-head/demo-media/generate", json=bad)
    assert status == 422
    assert data["fields"][0]["field"] == "video_name"
    assert s.count() == 0


@pytest.mark.parametrize("kind", ["500", "503"])
async def test_platform_errors_pass_through(sim_admin: SimAdmin, kind: str) -> None:
    s = sim_admin
    s.sim.faults.set("talking_head", kind, count=5)
    status, data, resp = await s.admin.call("GET", "/talking-head/demo-media/configurations")
    assert status == int(kind)
    assert resp.headers["X-Upstream-Status"] == kind
    assert data["status"] == "ERROR"


async def test_rate_limit_body_with_200_is_502_and_audits_as_error(
    sim_admin: SimAdmin,
) -> None:
    from structlog.testing import capture_logs

    s = sim_admin
    s.sim.faults.set("talking_head", "error_200", count=1)
    with capture_logs() as logs:
        status, data, _ = await s.admin.call("DELETE", "/talking-head/demo-media/video/x1")
    assert (status, data["error"]) == (502, "upstream_error_body")
    assert "Rate limit exceeded" in data["message"]
    (audit,) = [e for e in logs if e["event"] == "audit"]
    assert (audit["outcome"], audit["upstream_status"]) == ("upstream_error_body", 200)


async def test_connection_reset_is_502(sim_admin: SimAdmin) -> None:
    s = sim_admin
    s.sim.faults.set("restream", "reset")
    status, data, _ = await s.admin.call("GET", "/restream/demo-media/resources")
    assert status == 502
    assert data["error"] == "upstream_unreachable"


async def test_a_hanging_platform_is_504_while_it_still_hangs(make_admin: MakeAdmin) -> None:
    sim = Simulator(SimConfig(), FakeClock())
    hold = Hold()
    hold.arm("dvr")  # every DVR request waits at the simulator until released
    runner = await serve_held(sim, hold)
    try:
        admin = await make_admin(base_url=runner.base_url, token=sim.token, timeout=0.3)
        call = admin.call("GET", "/dvr/demo-media/streams/news")
        status, data, _ = await asyncio.wait_for(call, SAFETY_SECONDS)
        still_hanging = (hold.held, hold.answered)
    finally:
        hold.release()
        await runner.cleanup()
    assert (status, data["error"]) == (504, "upstream_timeout")
    assert still_hanging == (1, 0)


# --- the document states what the platform refuses; the exporter refuses it first --------------
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/restream/demo-media/history?resource_id=1001&start=2026-01-01T00:00:00Z"
            "&end=2026-02-01T00:00:01Z",
            None,
            "end",
        ),
        ("/talking-head/demo-media/tasks?sort=-circle", None, "sort"),
        (
            "/restream/demo-media/resources",
            {"type": "short", "active": True, "restreams": []},
            "name",
        ),
        (
            "/restream/demo-media/resources",
            {"name": "", "type": "short", "active": True, "restreams": []},
            "name",
        ),
    ],
)
async def test_what_the_platform_refuses_is_422_before_anything_is_sent(
    sim_admin: SimAdmin, path: str, body: Any, field: str
) -> None:
    s = sim_admin
    s.sim.requests.clear()
    method = "GET" if body is None else "POST"
    status, data, _ = await s.admin.call(method, path, json=body)
    assert status == 422, data
    assert [f["field"] for f in data["fields"]] == [field]
    assert len(s.sim.requests) == 0


async def test_a_history_of_exactly_31_days_is_read(sim_admin: SimAdmin) -> None:
    path = (
        "/restream/demo-media/history?resource_id=1001&start=2026-01-01T00:00:00Z"
        "&end=2026-02-01T00:00:00Z"
    )
    status, data, _ = await sim_admin.admin.call("GET", path)
    assert status == 200, data


# --- URLs are read as RFC 3986 reads them (exporter.support.urls) ------------------------------
async def test_a_host_before_a_fragment_gets_no_stored_key(sim_admin: SimAdmin) -> None:
    body = await masked_copy(sim_admin, "1001")
    # urllib (and the platform) send this to evil.example: the "#" ends the authority.
    body["restreams"][0]["target_url"] = "rtmp://evil.example#@a.rtmp.youtube.com/live2"
    fields = await refused_put(sim_admin, "1001", body)
    assert fields == ["restreams[0].target_url", "restreams[0].target_key"]


async def test_a_query_mask_behind_a_fragment_is_refused(sim_admin: SimAdmin) -> None:
    body = await masked_copy(sim_admin, "1002")
    token = body["restreams"][2]["target_url"].split("token=")[1]
    url = f"rtmp://evil.example#@ingest.partner.example/app?token={token}"
    body["restreams"][2]["target_url"] = url
    fields = await refused_put(sim_admin, "1002", body)
    assert fields == ["restreams[2].target_url", "restreams[2].target_key"]


async def test_a_backup_password_stays_with_its_application(sim_admin: SimAdmin) -> None:
    body = await masked_copy(sim_admin, "1001")
    assert body["restreams"][1]["backup"]["target_url"] == "rtmp://backup.twitch.tv/app"
    body["restreams"][1]["backup"]["target_url"] = "rtmp://backup.twitch.tv/attacker"
    assert await refused_put(sim_admin, "1001", body) == ["restreams[1].backup.password"]


async def test_an_unparsable_url_travels_with_no_mask(sim_admin: SimAdmin) -> None:
    body = await masked_copy(sim_admin, "1001")
    body["restreams"][0]["target_url"] = "rtmp://[a.rtmp.youtube.com/live2"
    fields = await refused_put(sim_admin, "1001", body)
    assert fields[0] == "restreams[0].target_url"
