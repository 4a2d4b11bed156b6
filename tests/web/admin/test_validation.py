"""Every validation rule: a JSON 4xx naming the field, and nothing sent upstream."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from exporter.talking_head.reply import ThConfigurations

from .conftest import Admin
from .test_routes import GENERATE, NEW_RESOURCE


def resource(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(NEW_RESOURCE)
    entry = body["restreams"][0]
    for key, value in changes.items():
        if key.startswith("entry_"):
            entry[key[6:]] = value
        else:
            body[key] = value
    return body


def generate(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(GENERATE)
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def window(start: str, stop: str) -> list[dict[str, str]]:
    return [{"start": start, "stop": stop}]


RES = "/restream/demo-media/resources"
HIST = "/restream/demo-media/history"
DVR = "/dvr/demo-media/streams/live/main"
GEN = "/talking-head/demo-media/generate"
TASKS = "/talking-head/demo-media/tasks"
H_OK = "resource_id=r1&start=2026-01-01T00:00:00Z&end=2026-01-01T01:00:00Z"

# (method, path, kwargs, status, field named)
RULES: list[tuple[str, str, dict[str, Any], int, str]] = [
    # restream bodies
    ("POST", RES, {"data": b"{not json"}, 400, "body"),
    ("POST", RES, {"data": b""}, 400, "body"),
    ("POST", RES, {"data": b'{"active": NaN}'}, 400, "body"),
    ("POST", RES, {"json": [1, 2]}, 422, "body"),
    ("POST", RES, {"json": resource(name=5)}, 422, "name"),
    ("POST", RES, {"json": resource(active="yes")}, 422, "active"),
    ("POST", RES, {"json": resource(type=None)}, 422, "type"),
    ("POST", RES, {"json": resource(restreams={})}, 422, "restreams"),
    ("POST", RES, {"json": resource(restreams=["x"])}, 422, "restreams[0]"),
    ("POST", RES, {"json": resource(entry_transcoded="no")}, 422, "restreams[0].transcoded"),
    ("POST", RES, {"json": resource(entry_target_key=7)}, 422, "restreams[0].target_key"),
    ("POST", RES, {"json": resource(entry_password=None)}, 422, "restreams[0].password"),
    ("POST", RES, {"json": resource(entry_backup=[])}, 422, "restreams[0].backup"),
    (
        "POST",
        RES,
        {"json": resource(entry_backup={"password": 1})},
        422,
        "restreams[0].backup.password",
    ),
    ("POST", RES, {"json": resource(entry_source="")}, 422, "restreams[0].source"),
    ("PUT", RES + "/r1", {"json": resource(entry_schedule="x")}, 422, "restreams[0].schedule"),
    (
        "POST",
        RES,
        {"json": resource(entry_schedule=window("2026-01-02 10:00:00", "2026-01-02T11:00:00Z"))},
        422,
        "restreams[0].schedule[0].start",
    ),
    (
        "POST",
        RES,
        {"json": resource(entry_schedule=window("2026-01-02T10:00:00Z", "2026-01-02T11:00:00"))},
        422,
        "restreams[0].schedule[0].stop",
    ),
    (
        "POST",
        RES,
        {"json": resource(entry_schedule=window("2026-02-30T10:00:00Z", "2026-03-02T11:00:00Z"))},
        422,
        "restreams[0].schedule[0].start",
    ),
    (
        "PUT",
        RES + "/r1",
        {"json": resource(entry_schedule=window("2026-01-02T12:00:00Z", "2026-01-02T11:00:00Z"))},
        422,
        "restreams[0].schedule[0].stop",
    ),
    (
        "POST",
        RES,
        {"json": resource(entry_schedule=[{"start": "2026-01-02T12:00:00Z"}])},
        422,
        "restreams[0].schedule[0].stop",
    ),
    # status and history queries
    ("GET", "/restream/demo-media/status?resource_id=", {}, 422, "resource_id"),
    ("GET", "/restream/demo-media/status?resourceid=r1", {}, 422, "resourceid"),
    ("GET", f"{HIST}?start=2026-01-01T00:00:00Z&end=2026-01-01T01:00:00Z", {}, 422, "resource_id"),
    ("GET", f"{HIST}?resource_id=r1&end=2026-01-01T01:00:00Z", {}, 422, "start"),
    ("GET", f"{HIST}?resource_id=r1&start=2026-01-01T00:00:00Z", {}, 422, "end"),
    ("GET", f"{HIST}?resource_id=r1&start=1767225600&end=2026-01-01T01:00:00Z", {}, 422, "start"),
    (
        "GET",
        f"{HIST}?resource_id=r1&start=2026-01-01T00:00:00Z&end=2026-01-01T01:00:00",
        {},
        422,
        "end",
    ),
    (
        "GET",
        f"{HIST}?resource_id=r1&start=2026-01-01T02:00:00Z&end=2026-01-01T01:00:00Z",
        {},
        422,
        "end",
    ),
    ("GET", f"{HIST}?{H_OK}&resource_id=r2", {}, 422, "resource_id"),
    # DVR delete
    ("DELETE", DVR, {}, 400, "body"),
    ("DELETE", DVR, {"json": {"from_ts": 1, "duration_sec": 5}}, 422, "host"),
    ("DELETE", DVR, {"json": {"host": "", "all": True}}, 422, "host"),
    ("DELETE", DVR, {"json": {"host": "*", "duration_sec": 5}}, 422, "from_ts"),
    ("DELETE", DVR, {"json": {"host": "*", "from_ts": "1", "duration_sec": 5}}, 422, "from_ts"),
    ("DELETE", DVR, {"json": {"host": "*", "from_ts": 100}}, 422, "duration_sec"),
    (
        "DELETE",
        DVR,
        {"json": {"host": "*", "from_ts": 100, "duration_sec": 5, "to_ts": 200}},
        422,
        "to_ts",
    ),
    (
        "DELETE",
        DVR,
        {"json": {"host": "*", "from_ts": 100, "duration_sec": 0}},
        422,
        "duration_sec",
    ),
    (
        "DELETE",
        DVR,
        {"json": {"host": "*", "from_ts": 100, "duration_sec": 1.5}},
        422,
        "duration_sec",
    ),
    ("DELETE", DVR, {"json": {"host": "*", "from_ts": 100, "to_ts": 100}}, 422, "to_ts"),
    ("DELETE", DVR, {"json": {"host": "*", "all": False}}, 422, "all"),
    ("DELETE", DVR, {"json": {"host": "*", "all": "true"}}, 422, "all"),
    ("DELETE", DVR, {"json": {"host": "*", "all": True, "from_ts": 1}}, 422, "from_ts"),
    (
        "DELETE",
        DVR,
        {"json": {"host": "*", "from_ts": 1, "duration_sec": 5, "durration": 1}},
        422,
        "durration",
    ),
    ("GET", "/dvr/demo-media/streams/live//main", {}, 422, "stream_name"),
    ("GET", "/dvr/demo-media/streams/live%2F..%2Fx", {}, 422, "stream_name"),
    # talking-head generate
    ("POST", GEN, {"json": generate(script=None)}, 422, "script"),
    ("POST", GEN, {"json": generate(script="")}, 422, "script"),
    ("POST", GEN, {"json": generate(script="x" * 3001)}, 422, "script"),
    ("POST", GEN, {"json": generate(actor=None)}, 422, "actor"),
    ("POST", GEN, {"json": generate(actor="Natalia")}, 422, "actor"),
    ("POST", GEN, {"json": generate(actor={"shot": "waist"})}, 422, "actor.name"),
    ("POST", GEN, {"json": generate(actor={"name": "Natalia"})}, 422, "actor.shot"),
    (
        "POST",
        GEN,
        {"json": generate(actor={"name": "N", "shot": "w", "version": "1.0"})},
        422,
        "actor.version",
    ),
    (
        "POST",
        GEN,
        {"json": generate(actor={"name": "N", "shot": "w", "size": "8K"})},
        422,
        "actor.size",
    ),
    (
        "POST",
        GEN,
        {"json": generate(actor={"name": "N", "shot": "w", "hair": "red"})},
        422,
        "actor.hair",
    ),
    ("POST", GEN, {"json": generate(voice=None)}, 422, "voice"),
    ("POST", GEN, {"json": generate(voice=3)}, 422, "voice"),
    ("POST", GEN, {"json": generate(speed=2)}, 422, "speed"),
    ("POST", GEN, {"json": generate(video_name="x" * 36)}, 422, "video_name"),
    ("POST", GEN, {"json": generate(background=1)}, 422, "background"),
    ("POST", GEN, {"json": generate(emotion="")}, 422, "emotion"),
    ("POST", GEN, {"json": generate(composition=[])}, 422, "composition"),
    ("POST", GEN, {"json": generate(composition={"scale": 1})}, 422, "composition.orientation"),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "diagonal"})},
        422,
        "composition.orientation",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "frame_style": "oval"})},
        422,
        "composition.frame_style",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "scale": 0})},
        422,
        "composition.scale",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "scale": 1.01})},
        422,
        "composition.scale",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "crop": -0.5})},
        422,
        "composition.crop",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "crop": "1"})},
        422,
        "composition.crop",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "shift": -1.5})},
        422,
        "composition.shift",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "frame_style": "circle"})},
        422,
        "composition.location",
    ),
    (
        "POST",
        GEN,
        {
            "json": generate(
                composition={"orientation": "vertical", "frame_style": "circle", "location": "top"}
            )
        },
        422,
        "composition.location",
    ),
    (
        "POST",
        GEN,
        {
            "json": generate(
                composition={
                    "orientation": "vertical",
                    "frame_style": "circle",
                    "location": "upperleft",
                    "border_color": "black",
                }
            )
        },
        422,
        "composition.border_color",
    ),
    (
        "POST",
        GEN,
        {
            "json": generate(
                composition={
                    "orientation": "vertical",
                    "frame_style": "circle",
                    "location": "upperleft",
                    "background_color": "#GGGGGG",
                }
            )
        },
        422,
        "composition.background_color",
    ),
    (
        "POST",
        GEN,
        {
            "json": generate(
                composition={
                    "orientation": "vertical",
                    "frame_style": "circle",
                    "location": "upperleft",
                    "scale": 0.5,
                }
            )
        },
        422,
        "composition.scale",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "location": "upperleft"})},
        422,
        "composition.location",
    ),
    (
        "POST",
        GEN,
        {"json": generate(composition={"orientation": "vertical", "zoom": 2})},
        422,
        "composition.zoom",
    ),
    ("POST", GEN, {"json": generate(circle={"location": "middle"})}, 422, "circle.location"),
    (
        "POST",
        GEN,
        {"json": generate(circle={"border_color": "#12345"})},
        422,
        "circle.border_color",
    ),
    ("POST", GEN, {"json": generate(circle={"radius": 3})}, 422, "circle.radius"),
    # rename
    (
        "PATCH",
        "/talking-head/demo-media/video/task-1",
        {"json": {"video_name": "x" * 36}},
        422,
        "video_name",
    ),
    (
        "PATCH",
        "/talking-head/demo-media/video/task-1",
        {"json": {"video_name": 5}},
        422,
        "video_name",
    ),
    ("PATCH", "/talking-head/demo-media/video/task-1", {"json": {"name": "x"}}, 422, "name"),
    ("PATCH", "/talking-head/demo-media/video/task-1", {"json": "x"}, 422, "body"),
    # tasks query
    ("GET", f"{TASKS}?start=2026-01-01T00:00:30Z", {}, 422, "start"),
    ("GET", f"{TASKS}?start=2026-01-01", {}, 422, "start"),
    ("GET", f"{TASKS}?end=2026-13-01T00:00:00Z", {}, 422, "end"),
    ("GET", f"{TASKS}?end=2026-01-01T00:00:00%2B03:00", {}, 422, "end"),
    ("GET", f"{TASKS}?start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z", {}, 422, "end"),
    ("GET", f"{TASKS}?offset=-1", {}, 422, "offset"),
    ("GET", f"{TASKS}?limit=0", {}, 422, "limit"),
    ("GET", f"{TASKS}?limit=ten", {}, 422, "limit"),
    ("GET", f"{TASKS}?sort=*duration", {}, 422, "sort"),
    ("GET", f"{TASKS}?sort=-colour", {}, 422, "sort"),
    ("GET", f"{TASKS}?fields=script,colour", {}, 422, "fields"),
    ("GET", f"{TASKS}?id=", {}, 422, "id"),
    ("GET", f"{TASKS}?page=2", {}, 422, "page"),
    ("GET", f"{TASKS}?limit=1&limit=2", {}, 422, "limit"),
    ("GET", "/talking-head/demo-media/configurations?x=1", {}, 422, "x"),
]


@pytest.mark.parametrize(
    ("method", "path", "kw", "status", "field"),
    RULES,
    ids=[f"{r[0]} {r[1].split('/')[-1][:40]} {r[4]}" for r in RULES],
)
async def test_bad_request_names_the_field_and_sends_nothing(
    admin: Admin, method: str, path: str, kw: dict[str, Any], status: int, field: str
) -> None:
    got, data, resp = await admin.call(method, path, **kw)
    assert got == status, data
    assert resp.content_type == "application/json"
    assert data["error"] == "invalid_request"
    assert field in [f["field"] for f in data["fields"]], data
    assert field in data["message"]
    assert admin.upstream.requests == []


async def test_every_bad_field_is_named_at_once(admin: Admin) -> None:
    body = generate(script="", voice=None, video_name="x" * 40, speed=1)
    status, data, _ = await admin.call("POST", GEN, json=body)
    assert status == 422
    assert {f["field"] for f in data["fields"]} == {"script", "voice", "video_name", "speed"}
    assert admin.upstream.requests == []


CONFIG = ThConfigurations(
    voices={"Alena": {"emotions": ["neutral", "good"]}, "Filipp": {}},
    models={
        "Natalia": {
            "1.0.0": {"voices": ["Alena"], "shots": {"waist": {"size": "HD"}}},
            "1.1.0": {"voices": ["Alena"], "shots": {"close": {"size": "HD"}}},
        }
    },
    backgrounds={"green_screen": {"sizes": ["HD"]}, "office": {"sizes": ["HD"]}},
    quota_limit=100,
    quota_left=90,
    watermark=False,
)


async def cache_catalogue(admin: Admin, config: ThConfigurations = CONFIG) -> None:
    """Let the talking-head poller read ``config`` from the platform, as its schedule would."""
    reply = {
        "status": "ok",
        "voices": config.voices,
        "models": config.models,
        "backgrounds": config.backgrounds,
        "quota": {"limit": config.quota_limit, "left": config.quota_left},
        "watermark": config.watermark,
    }
    admin.upstream.replies[("GET", "/app/th-api/v1/accounts/demo-media/configurations")] = (
        200,
        reply,
    )
    await admin.areas.talking_head.poller.poll("demo-media")
    assert admin.areas.talking_head.poller.latest_configurations("demo-media") == config
    admin.upstream.requests.clear()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"voice": "Oksana"}, "voice"),
        ({"emotion": "evil"}, "emotion"),
        ({"background": "beach"}, "background"),
        ({"actor": {"name": "Ivan", "shot": "waist"}}, "actor.name"),
        ({"actor": {"name": "Natalia", "version": "9.9.9", "shot": "waist"}}, "actor.version"),
        ({"actor": {"name": "Natalia", "version": "1.0.0", "shot": "close"}}, "actor.shot"),
        ({"actor": {"name": "Natalia", "version": "latest", "shot": "knee"}}, "actor.shot"),
    ],
)
async def test_unknown_catalogue_names_are_refused_when_the_catalogue_is_cached(
    admin: Admin, changes: dict[str, Any], field: str
) -> None:
    await cache_catalogue(admin)
    status, data, _ = await admin.call("POST", GEN, json=generate(**changes))
    assert status == 422, data
    assert [f["field"] for f in data["fields"]] == [field]
    assert admin.upstream.requests == []


async def test_known_catalogue_names_pass(admin: Admin) -> None:
    await cache_catalogue(admin)
    body = generate(
        emotion="good",
        background="office",
        actor={"name": "Natalia", "version": "latest", "shot": "close"},
    )
    status, data, _ = await admin.call("POST", GEN, json=body)
    assert status == 202, data


async def test_catalogue_check_is_skipped_without_a_cached_catalogue(admin: Admin) -> None:
    assert admin.areas.talking_head.poller.latest_configurations("demo-media") is None
    status, _, _ = await admin.call("POST", GEN, json=generate(voice="Anyone"))
    assert status == 202


async def test_a_circle_composition_with_its_own_fields_passes(admin: Admin) -> None:
    body = generate(
        composition={
            "orientation": "horizontal",
            "frame_style": "circle",
            "location": "lowerright",
            "background_color": "#FFF",
            "border_color": "#000000",
        },
        circle={"location": "lowerright", "border_color": "#000000", "background_color": "#fff"},
    )
    status, data, _ = await admin.call("POST", GEN, json=body)
    assert status == 202, data


async def test_script_of_exactly_3000_and_name_of_35_characters_pass(admin: Admin) -> None:
    status, data, _ = await admin.call(
        "POST", GEN, json=generate(script="x" * 3000, video_name="n" * 35)
    )
    assert status == 202, data


@pytest.mark.parametrize("name", ["..", "live/..", "./x", "a//b", "/a", "a/", "x\ny"])
def test_stream_names_that_would_leave_the_dvr_path_are_refused(name: str) -> None:
    from exporter.web.admin.validation import check_stream_name

    assert [e.field for e in check_stream_name(name)] == ["stream_name"]


@pytest.mark.parametrize("name", ["live/main", "news", "a.b/c..d"])
def test_ordinary_stream_names_pass(name: str) -> None:
    from exporter.web.admin.validation import check_stream_name

    assert check_stream_name(name) == []


@pytest.mark.parametrize("bad", ["a.b", "r%201", "%C3%A9t%C3%A9", "x" * 65, "a%3Bb"])
async def test_resource_and_task_ids_are_limited_to_the_platforms_characters(
    admin: Admin, bad: str
) -> None:
    paths = [
        ("GET", f"/restream/demo-media/resources/{bad}", "resource_id"),
        ("GET", f"/talking-head/demo-media/status/{bad}", "task_id"),
        ("DELETE", f"/talking-head/demo-media/video/{bad}", "task_id"),
        ("GET", f"/restream/demo-media/status?resource_id={bad}", "resource_id"),
    ]
    for method, path, name in paths:
        status, data, _ = await admin.call(method, path)
        assert status == 422, path
        assert data["fields"] == [
            {
                "field": name,
                "message": "expected 1-64 letters, digits, '-' or '_' (an id the platform "
                "hands out)",
            }
        ]
    assert admin.upstream.requests == []


def test_the_openapi_document_carries_the_id_pattern() -> None:
    from exporter.web.admin import ROUTES, build_openapi
    from exporter.web.admin.schemas import full
    from exporter.web.admin.validation import SEGMENT

    doc = build_openapi(ROUTES)
    params = doc["paths"]["/restream/{account}/resources/{resource_id}"]["get"]["parameters"]
    assert {
        "name": params[-1]["name"],
        "pattern": params[-1]["schema"]["pattern"],
    } == {"name": "resource_id", "pattern": full(SEGMENT)}
    assert full(SEGMENT) == "^(?:[A-Za-z0-9_-]{1,64})(?![\\s\\S])"
