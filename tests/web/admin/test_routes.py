"""Each admin route's happy path: the platform receives exactly the expected request."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.exposition import StoreKey
from tests.rig.table import READ_TOKEN, UPSTREAM_TOKEN

from .conftest import Admin

RS = "/app/restream/v2/demo-media"
TH = "/app/th-api/v1/accounts/demo-media"
DVR = "/app/dvr-net/v1/demo-media/streams"

NEW_RESOURCE = {
    "name": "event",
    "type": "short",
    "active": True,
    "restreams": [
        {
            "schedule": [{"start": "2026-01-02T10:00:00Z", "stop": "2026-01-02T12:00:00Z"}],
            "source": "rtmp://origin.example/live/event",
            "transcoded": True,
            "transcode_quality": "360p",
            "target_type": "customRTMP",
            "target_url": "rtmp://target.example/app",
            "target_key": "new-key",
            "login": "",
            "password": "",
            "backup": {},
        }
    ],
}
GENERATE = {
    "script": "Hello there",
    "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
    "voice": "Alena",
    "video_name": "greeting",
    "composition": {"orientation": "vertical", "scale": 0.5, "crop": 1, "shift": -0.25},
}

# (method, our path, keyword arguments, upstream method, upstream path, query, body, our status)
CASES: list[tuple[str, str, dict[str, Any], str, str, list[tuple[str, str]], Any, int]] = [
    ("GET", "/restream/demo-media/resources", {}, "GET", f"{RS}/resources", [], None, 200),
    (
        "POST",
        "/restream/demo-media/resources",
        {"json": NEW_RESOURCE},
        "POST",
        f"{RS}/resources",
        [],
        NEW_RESOURCE,
        200,
    ),
    ("GET", "/restream/demo-media/resources/r1", {}, "GET", f"{RS}/resources/r1", [], None, 200),
    (
        "PUT",
        "/restream/demo-media/resources/r1",
        {"json": NEW_RESOURCE},
        "PUT",
        f"{RS}/resources/r1",
        [],
        NEW_RESOURCE,
        200,
    ),
    ("GET", "/restream/demo-media/status", {}, "GET", f"{RS}/status", [], None, 200),
    (
        "GET",
        "/restream/demo-media/status?resource_id=r1",
        {},
        "GET",
        f"{RS}/status",
        [("resource_id", "r1")],
        None,
        200,
    ),
    (
        "GET",
        "/restream/demo-media/history?resource_id=r1&start=2026-01-01T00:00:00Z"
        "&end=2026-01-01T01:00:00Z",
        {},
        "GET",
        f"{RS}/history",
        [("resource_id", "r1"), ("start", "2026-01-01T00:00:00Z"), ("end", "2026-01-01T01:00:00Z")],
        None,
        200,
    ),
    ("GET", "/dvr/demo-media/streams/live/main", {}, "GET", f"{DVR}/live/main", [], None, 200),
    ("GET", "/dvr/demo-media/streams/live%2Fmain", {}, "GET", f"{DVR}/live/main", [], None, 200),
    (
        "DELETE",
        "/dvr/demo-media/streams/live/main",
        {"json": {"host": "*", "from_ts": 1767225600, "duration_sec": 60}},
        "DELETE",
        f"{DVR}/live/main",
        [],
        {"host": "*", "from_ts": 1767225600, "duration_sec": 60},
        200,
    ),
    (
        "DELETE",
        "/dvr/demo-media/streams/live/main",
        {"json": {"host": "node-1", "from_ts": 1767225600, "to_ts": 1767225660}},
        "DELETE",
        f"{DVR}/live/main",
        [],
        {"host": "node-1", "from_ts": 1767225600, "to_ts": 1767225660},
        200,
    ),
    (
        "DELETE",
        "/dvr/demo-media/streams/live/main",
        {"json": {"host": "*", "all": True}},
        "DELETE",
        f"{DVR}/live/main",
        [],
        {"host": "*", "all": True},
        200,
    ),
    (
        "GET",
        "/talking-head/demo-media/configurations",
        {},
        "GET",
        f"{TH}/configurations",
        [],
        None,
        200,
    ),
    (
        "POST",
        "/talking-head/demo-media/generate",
        {"json": GENERATE},
        "POST",
        f"{TH}/generate",
        [],
        GENERATE,
        202,
    ),
    (
        "GET",
        "/talking-head/demo-media/status/task-1",
        {},
        "GET",
        f"{TH}/status/task-1",
        [],
        None,
        200,
    ),
    (
        "DELETE",
        "/talking-head/demo-media/cancel/task-1",
        {},
        "DELETE",
        f"{TH}/cancel/task-1",
        [],
        None,
        200,
    ),
    (
        "GET",
        "/talking-head/demo-media/video/task-1",
        {},
        "GET",
        f"{TH}/video/task-1",
        [],
        None,
        200,
    ),
    (
        "PATCH",
        "/talking-head/demo-media/video/task-1",
        {"json": {"video_name": "new name"}},
        "PATCH",
        f"{TH}/video/task-1",
        [],
        {"video_name": "new name"},
        200,
    ),
    (
        "DELETE",
        "/talking-head/demo-media/video/task-1",
        {},
        "DELETE",
        f"{TH}/video/task-1",
        [],
        None,
        200,
    ),
    ("GET", "/talking-head/demo-media/tasks", {}, "GET", f"{TH}/tasks", [], None, 200),
    (
        "GET",
        "/talking-head/demo-media/tasks?start=2026-01-01T00:00:00Z&end=2026-01-02T00:00:00%2B00:00"
        "&offset=0&limit=20&sort=-duration&fields=video_name,script&id=task-1",
        {},
        "GET",
        f"{TH}/tasks",
        [
            ("start", "2026-01-01T00:00:00Z"),
            ("end", "2026-01-02T00:00:00+00:00"),
            ("offset", "0"),
            ("limit", "20"),
            ("sort", "-duration"),
            ("fields", "video_name,script"),
            ("id", "task-1"),
        ],
        None,
        200,
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "kw", "up_method", "up_path", "up_query", "up_body", "status"),
    CASES,
    ids=[f"{c[0]} {c[1][:60]}" for c in CASES],
)
async def test_route_sends_exactly_the_expected_request(
    admin: Admin,
    method: str,
    path: str,
    kw: dict[str, Any],
    up_method: str,
    up_path: str,
    up_query: list[tuple[str, str]],
    up_body: Any,
    status: int,
) -> None:
    got, data, resp = await admin.call(method, path, **kw)
    assert got == status, data
    assert resp.headers["X-Upstream-Status"] == str(status)
    assert len(admin.upstream.requests) == 1
    seen = admin.upstream.requests[0]
    assert (seen.method, seen.path, seen.query, seen.body) == (
        up_method,
        up_path,
        up_query,
        up_body,
    )
    assert seen.token == UPSTREAM_TOKEN


async def test_reads_work_with_the_read_token(admin: Admin) -> None:
    status, _, _ = await admin.call("GET", "/talking-head/demo-media/tasks", token=READ_TOKEN)
    assert status == 200


async def test_sort_plus_sent_unencoded_arrives_as_plus(admin: Admin) -> None:
    status, _, _ = await admin.call("GET", "/talking-head/demo-media/tasks?sort=+date")
    assert status == 200
    assert admin.upstream.requests[0].query == [("sort", "+date")]


async def test_rename_without_body_sends_empty_object(admin: Admin) -> None:
    status, _, _ = await admin.call("PATCH", "/talking-head/demo-media/video/task-1")
    assert status == 200
    assert admin.upstream.requests[0].body == {}


async def test_reply_body_passes_through(admin: Admin) -> None:
    _, data, _ = await admin.call("GET", "/talking-head/demo-media/video/task-1")
    assert data == {"status": "ok", "url": "https://v.example/x.mp4"}


async def test_generate_tracks_the_task_and_refreshes_the_quota(admin: Admin) -> None:
    status, data, _ = await admin.call("POST", "/talking-head/demo-media/generate", json=GENERATE)
    assert (status, data) == (202, {"status": "ok", "id": "task-1"})
    assert admin.tracker.following() == [("demo-media", "task-1", "in_queue")]
    await admin.settle()  # the talking-head area polls the quota in the background
    quota = admin.ctx.store.fragment(StoreKey("talking_head", "demo-media"))
    assert quota is not None
    left = next(s for s in quota.samples if s.name == "cdnvideo_talking_head_quota_left")
    assert quota.value(left, account="demo-media") == 9
    assert ("GET", f"{TH}/configurations") in [(r.method, r.path) for r in admin.upstream.requests]
    frag = admin.ctx.store.fragment(StoreKey("talking_head_tasks", "demo-media"))
    assert frag is not None
    spec = next(s for s in frag.samples if s.name == "cdnvideo_talking_head_tasks")
    assert frag.value(spec, account="demo-media", status="in_queue") == 1


async def test_rejected_generate_is_not_tracked(admin: Admin) -> None:
    admin.upstream.replies[("POST", f"{TH}/generate")] = (
        422,
        {"status": "ERROR", "message": "bad style for Natalia-1.0.0"},
    )
    status, data, _ = await admin.call("POST", "/talking-head/demo-media/generate", json=GENERATE)
    assert status == 422
    assert data == {"status": "ERROR", "message": "bad style for Natalia-1.0.0"}
    assert admin.tracker.following() == []
