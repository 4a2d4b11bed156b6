"""Talking-head over HTTP: catalogue, generate validation and limits, task lifecycle, videos."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, TOKEN, Client, ClientFactory, iso

BASE = "/app/th-api/v1/accounts/demo-media"
GOOD: dict[str, Any] = {
    "script": "Hello from the simulator, this is a short test script.",
    "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
    "voice": "Alena",
}


async def generate(client: Client, body: Any) -> tuple[int, Any]:
    resp = await client.post(f"{BASE}/generate", json=body)
    return resp.status, await resp.json()


async def task_of(client: Client, task_id: str) -> dict[str, Any]:
    resp = await client.get(f"{BASE}/status/{task_id}")
    body = await resp.json()
    assert body["status"] == "ok"
    task: dict[str, Any] = body["task"]
    return task


async def test_configurations(client: Client) -> None:
    body = await (await client.get(f"{BASE}/configurations")).json()
    assert body["status"] == "ok"
    assert body["voices"]["Alena"] == {
        "language": "ru-RU",
        "gender": "female",
        "name": "alena",
        "provider": "Yandex",
        "emotions": ["neutral", "good"],
    }
    assert "emotions" not in body["voices"]["Filipp"]
    natalia = body["models"]["Natalia"]["1.0.0"]
    assert set(natalia) == {"style", "gender", "voices", "shots"}
    assert natalia["shots"]["waist"] == {"size": "HD"}
    assert body["backgrounds"]["office"] == {"sizes": ["HD", "FullHD"]}
    assert body["quota"] == {"limit": 100, "left": 97}  # three demo videos already made
    assert body["watermark"] is False
    shop = await (await client.get("/app/th-api/v1/accounts/demo-shop/configurations")).json()
    assert shop["watermark"] is True


async def test_generate_accepts_and_spends_quota(client: Client) -> None:
    status, body = await generate(client, GOOD)
    assert status == 202
    assert body["status"] == "ok"
    assert len(body["id"]) == 36
    quota = (await (await client.get(f"{BASE}/configurations")).json())["quota"]
    assert quota == {"limit": 100, "left": 96}


async def test_task_moves_through_its_states_with_the_clock(
    client: Client, clock: FakeClock
) -> None:
    _, body = await generate(client, GOOD)
    tid = body["id"]
    task = await task_of(client, tid)
    assert task == {
        "id": tid,
        "attempts": 0,
        "status": "in_queue",
        "message": "Task is waiting in the queue",
    }
    clock.advance(20)
    task = await task_of(client, tid)
    assert (task["status"], task["attempts"]) == ("processing", 1)
    resp = await client.get(f"{BASE}/video/{tid}")
    assert resp.status == 400
    assert await resp.json() == {
        "status": "ERROR",
        "message": "Video is not ready (task status: processing)",
    }
    clock.advance(60)
    task = await task_of(client, tid)
    assert task == {"id": tid, "attempts": 1, "status": "processed", "message": "Video is ready"}
    link = await (await client.get(f"{BASE}/video/{tid}")).json()
    assert link["status"] == "ok"
    assert link["url"].startswith(f"https://th-video.cdn.example/demo-media/{tid}.mp4?expires=")
    assert f"expires={int(clock.time()) + 6 * 3600}" in link["url"]


async def test_upper_case_statuses_when_configured(
    aiohttp_client: ClientFactory, clock: FakeClock
) -> None:
    sim = Simulator(SimConfig(th_status_uppercase=True), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    _, body = await generate(client, GOOD)
    assert (await task_of(client, body["id"]))["status"] == "IN_QUEUE"


async def test_cancel_then_cancel_again_names_the_status(client: Client) -> None:
    _, body = await generate(client, GOOD)
    tid = body["id"]
    resp = await client.delete(f"{BASE}/cancel/{tid}")
    assert (resp.status, await resp.json()) == (200, {"status": "ok"})
    task = await task_of(client, tid)
    assert task["status"] == "canceled"
    assert task["message"] == "Task was cancelled by user request"
    resp = await client.delete(f"{BASE}/cancel/{tid}")
    assert resp.status == 400
    assert await resp.json() == {"status": "ERROR", "message": "Wrong task status: canceled"}


async def test_cancel_of_a_processed_task_is_refused(client: Client, clock: FakeClock) -> None:
    _, body = await generate(client, GOOD)
    clock.advance(200)
    resp = await client.delete(f"{BASE}/cancel/{body['id']}")
    assert await resp.json() == {"status": "ERROR", "message": "Wrong task status: processed"}
    resp = await client.delete(f"{BASE}/cancel/no-such-task")
    assert (resp.status, await resp.json()) == (404, {"status": "ERROR", "message": "No such task"})


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        (
            {"speed": 2, "actor": {**GOOD["actor"], "mood": "x"}},
            422,
            "Incorrect parameter names: speed, actor.mood",
        ),
        ({"script": None}, 400, "Field 'script' is required"),
        ({"voice": None}, 400, "Field 'voice' is required"),
        ({"actor": None}, 400, "Field 'actor' is required"),
        ({"actor": {"name": "Natalia"}}, 400, "Field 'actor.shot' is required"),
        ({"script": "x" * 3001}, 400, "Field 'script' must be at most 3000 characters"),
        ({"actor": {**GOOD["actor"], "style": "casual"}}, 400, "bad style for Natalia-1.0.0"),
        ({"actor": {**GOOD["actor"], "shot": "full"}}, 400, "bad shot for Natalia-1.0.0"),
        ({"actor": {**GOOD["actor"], "version": "9.9.9"}}, 400, "bad version for Natalia-9.9.9"),
        ({"voice": "Guy"}, 400, "bad voice for Natalia-1.0.0"),
        ({"background": "studio"}, 400, "bad background for Natalia-1.0.0"),
        ({"voice": "Nobody"}, 400, "Unknown voice 'Nobody'"),
        ({"actor": {"name": "Bob", "shot": "waist"}}, 400, "Unknown actor 'Bob'"),
        ({"emotion": "evil"}, 400, "bad emotion for voice Alena: evil"),
        ({"video_name": "n" * 36}, 400, "Field 'video_name' must be at most 35 characters"),
        (
            {"composition": {"frame_style": "circle"}},
            400,
            "Field 'composition.orientation' is required",
        ),
        (
            {"composition": {"orientation": "horizontal", "scale": 0}},
            400,
            "Field 'composition.scale' must be in (0,1]",
        ),
        (
            {"composition": {"orientation": "vertical", "shift": 2}},
            400,
            "Field 'composition.shift' must be in [-1,1]",
        ),
        (
            {"composition": {"orientation": "vertical", "frame_style": "circle", "crop": 0.5}},
            400,
            "Field 'composition.crop' does not apply to circle",
        ),
        (
            {"circle": {"location": "middle"}},
            400,
            "Field 'circle.location' must be one of upperleft, upperright, lowerleft, lowerright",
        ),
    ],
)
async def test_generate_validation(
    client: Client, change: dict[str, Any], status: int, message: str
) -> None:
    body = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    assert await generate(client, body) == (status, {"status": "ERROR", "message": message})


async def test_latest_version_picks_the_newest_matching_model(client: Client) -> None:
    body = {
        **GOOD,
        "actor": {"name": "Natalia", "version": "latest", "shot": "close"},
        "composition": {"orientation": "vertical"},
        "video_name": "Close-up",
    }
    _, made = await generate(client, body)
    tasks = await (
        await client.get(
            f"{BASE}/tasks",
            params={"id": made["id"], "fields": "model_version,orientation,video_name,circle"},
        )
    ).json()
    assert tasks == [
        {
            "id": made["id"],
            "video_url": "",
            "resolution": "1080x1920",
            "duration": 0,
            "date": iso(T0 + 30, "Z"),
            "model_version": "1.0.0",
            "orientation": "vertical",
            "video_name": "Close-up",
            "circle": {"location": None, "border_color": None, "background_color": None},
        }
    ]
    _, newest = await generate(client, {**GOOD, "actor": {"name": "Natalia", "shot": "waist"}})
    tasks = await (
        await client.get(f"{BASE}/tasks", params={"id": newest["id"], "fields": "model_version"})
    ).json()
    assert tasks[0]["model_version"] == "1.1.0"


async def test_ten_generations_a_minute(client: Client, clock: FakeClock) -> None:
    for _ in range(10):
        assert (await generate(client, GOOD))[0] == 202
    assert await generate(client, GOOD) == (
        429,
        {
            "status": "ERROR",
            "message": "Rate limit exceeded: at most 10 generation requests per minute",
        },
    )
    clock.advance(60)
    assert (await generate(client, GOOD))[0] == 202


async def test_quota_runs_out(aiohttp_client: ClientFactory, clock: FakeClock) -> None:
    sim = Simulator(SimConfig(th_quota_limit=4), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    assert (await generate(client, GOOD))[0] == 202
    assert await generate(client, GOOD) == (429, {"status": "ERROR", "message": "Quota exceeded"})


async def test_monthly_request_allowance(aiohttp_client: ClientFactory, clock: FakeClock) -> None:
    sim = Simulator(SimConfig(th_monthly_requests=2), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    for _ in range(2):
        assert (await client.get(f"{BASE}/configurations")).status == 200
    resp = await client.get(f"{BASE}/tasks")
    assert (resp.status, await resp.json()) == (
        429,
        {"status": "ERROR", "message": "Monthly request limit exceeded (2 requests)"},
    )
    clock.set(1_769_904_000)  # 2026-02-01
    assert (await client.get(f"{BASE}/tasks")).status == 200


async def test_task_list_filters_sorts_and_pages(client: Client, clock: FakeClock) -> None:
    demo = await (await client.get(f"{BASE}/tasks")).json()
    assert len(demo) == 3
    assert set(demo[0]) == {"id", "video_url", "resolution", "duration", "date"}
    assert [t["date"] for t in demo] == sorted((t["date"] for t in demo), reverse=True)
    _, made = await generate(client, {**GOOD, "script": "Short."})
    clock.advance(300)
    listed = await (await client.get(f"{BASE}/tasks", params={"sort": "+date"})).json()
    assert [t["id"] for t in listed][-1] == made["id"]
    by_duration = await (await client.get(f"{BASE}/tasks?sort=-duration&limit=1")).json()
    assert by_duration[0]["duration"] == max(t["duration"] for t in listed)
    page = await (
        await client.get(f"{BASE}/tasks", params={"offset": 1, "limit": 2, "sort": "+date"})
    ).json()
    assert [t["id"] for t in page] == [t["id"] for t in listed[1:3]]
    recent = await (
        await client.get(
            f"{BASE}/tasks", params={"start": iso(T0, "Z"), "end": iso(T0 + 3600, "+00:00")}
        )
    ).json()
    assert [t["id"] for t in recent] == [made["id"]]
    one = await (
        await client.get(f"{BASE}/tasks", params={"id": made["id"], "fields": "script,voice_name"})
    ).json()
    assert one[0]["script"] == "Short."
    assert one[0]["voice_name"] == "Alena"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"start": "2026-01-01T00:00:30Z"}, "Parameter 'start': seconds must be 00"),
        ({"end": "tomorrow"}, "Parameter 'end' must look like 2026-01-01T00:00:00Z"),
        ({"limit": "-1"}, "Parameter 'limit' must be a non-negative integer"),
        ({"sort": "-color"}, "Cannot sort by 'color'"),
        (
            {"fields": "script,colour"},
            "Unknown field 'colour'; known: background, shot, script, "
            "voice_name, actor_name, model_version, video_name, emotion, orientation, crop, shift, "
            "scale, circle",
        ),
    ],
)
async def test_task_list_validation(client: Client, params: dict[str, str], message: str) -> None:
    resp = await client.get(f"{BASE}/tasks", params=params)
    assert (resp.status, await resp.json()) == (400, {"status": "ERROR", "message": message})


async def test_rename_and_delete_video(client: Client) -> None:
    tid = (await (await client.get(f"{BASE}/tasks")).json())[0]["id"]
    resp = await client.patch(f"{BASE}/video/{tid}", json={"video_name": "Renamed"})
    assert await resp.json() == {"status": "ok", "message": "Video renamed"}
    listed = await (
        await client.get(f"{BASE}/tasks", params={"id": tid, "fields": "video_name"})
    ).json()
    assert listed[0]["video_name"] == "Renamed"
    resp = await client.patch(f"{BASE}/video/{tid}", json={"video_name": "x" * 36})
    assert (resp.status, await resp.json()) == (
        400,
        {"status": "ERROR", "message": "Field 'video_name' must be at most 35 characters"},
    )
    resp = await client.delete(f"{BASE}/video/{tid}")
    assert await resp.json() == {"status": "ok", "message": "Video deleted"}
    for method in ("PATCH", "DELETE", "GET"):
        resp = await client.request(method, f"{BASE}/video/{tid}", json={"video_name": "a"})
        assert (resp.status, await resp.json()) == (
            404,
            {"status": "ERROR", "message": "no such video"},
        )


async def test_unknown_account(client: Client) -> None:
    resp = await client.get("/app/th-api/v1/accounts/acme/configurations")
    assert (resp.status, await resp.json()) == (
        404,
        {"status": "ERROR", "message": "Invalid account"},
    )


async def test_generate_body_must_be_json(client: Client) -> None:
    resp = await client.post(f"{BASE}/generate", data=b"script=hi")
    assert (resp.status, await resp.json()) == (
        400,
        {"status": "ERROR", "message": "Request body must be valid JSON"},
    )
