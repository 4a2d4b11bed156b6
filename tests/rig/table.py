"""A small fake platform for admin tests: records every request, answers from a table."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.rig.http import FakeServer

UPSTREAM_TOKEN = "upstream-secret-token-123"
READ_TOKEN = "read-token-abc-0123"
WRITE_TOKEN = "write-token-xyz-0123"
ACCOUNTS = ("demo-media", "demo-shop")

RESOURCE = {
    "resource_id": "r1",
    "name": "main",
    "type": "short",
    "active": True,
    "creation_ts": 1767225600,
    "modification_ts": 1767225600,
    "restreams": [
        {
            "schedule": [],
            "source": "rtmp://origin.example/live/main",
            "transcoded": False,
            "transcode_quality": "",
            "target_type": "customRTMP",
            "target_url": "rtmp://alice:url-secret-pw@target.example/app",
            "target_key": "stream-key-secret-1",
            "login": "alice",
            "password": "target-password-secret",
            "backup": {
                "target_url": "rtmp://backup.example/app",
                "login": "bob",
                "password": "backup-password-secret",
            },
        }
    ],
}
SECRETS = (
    "url-secret-pw",
    "stream-key-secret-1",
    "target-password-secret",
    "backup-password-secret",
    UPSTREAM_TOKEN,
    READ_TOKEN,
    WRITE_TOKEN,
)


def default_replies() -> dict[tuple[str, str], tuple[int, Any]]:
    rs = "/app/restream/v2/demo-media"
    th = "/app/th-api/v1/accounts/demo-media"
    resource = copy.deepcopy(RESOURCE)
    data = {k: v for k, v in resource.items() if k != "resource_id"}
    return {
        ("GET", f"{rs}/resources"): (
            200,
            {"account": "demo-media", "modification_ts": 1, "data": {"resources": [resource]}},
        ),
        ("GET", f"{rs}/resources/r1"): (
            200,
            {"account": "demo-media", "resource_id": "r1", "modification_ts": 1, "data": data},
        ),
        ("POST", f"{rs}/resources"): (
            200,
            {"success": True, "code": 200, "message": "created", "resource_id": "r2"},
        ),
        ("PUT", f"{rs}/resources/r1"): (200, {"success": True, "code": 200, "message": "ok"}),
        ("GET", f"{rs}/status"): (
            200,
            {
                "account": "demo-media",
                "data": [
                    {
                        "resource_id": "r1",
                        "status": [
                            {
                                "status": {"code": 0, "description": "OK"},
                                "source": "rtmp://origin.example/live/main",
                                "target_url": "rtmp://alice:url-secret-pw@target.example/app",
                                "target_key": "stream-key-secret-1",
                            }
                        ],
                    }
                ],
            },
        ),
        ("GET", f"{rs}/history"): (
            200,
            {
                "account": "demo-media",
                "resource_id": "r1",
                "start": "2026-01-01T00:00:00",
                "end": "2026-01-01T01:00:00",
                "data": [
                    {
                        "source": "rtmp://origin.example/live/main",
                        "history": {
                            "rtmp://target.example/app": {
                                "stream-key-secret-1": [
                                    {"code": 0, "description": "OK", "time": 1767225600}
                                ]
                            }
                        },
                    }
                ],
            },
        ),
        ("GET", "/app/dvr-net/v1/demo-media/streams/live/main"): (
            200,
            {"status": "Completed", "stream_name": "live/main", "data": []},
        ),
        ("DELETE", "/app/dvr-net/v1/demo-media/streams/live/main"): (
            200,
            {"status": "Completed", "stream_name": "live/main"},
        ),
        ("GET", f"{th}/configurations"): (
            200,
            {
                "status": "ok",
                "quota": {"limit": 10, "left": 9},
                "voices": {"Alena": {"emotions": ["neutral", "good"]}},
                "models": {"Natalia": {"1.0.0": {"voices": ["Alena"], "shots": {"waist": {}}}}},
                "backgrounds": {"office": {}},
            },
        ),
        ("POST", f"{th}/generate"): (202, {"status": "ok", "id": "task-1"}),
        ("GET", f"{th}/status/task-1"): (
            200,
            {"status": "ok", "task": {"id": "task-1", "status": "in_queue", "attempts": 0}},
        ),
        ("DELETE", f"{th}/cancel/task-1"): (200, {"status": "ok"}),
        ("GET", f"{th}/video/task-1"): (200, {"status": "ok", "url": "https://v.example/x.mp4"}),
        ("PATCH", f"{th}/video/task-1"): (200, {"status": "ok", "message": "renamed"}),
        ("DELETE", f"{th}/video/task-1"): (200, {"status": "ok", "message": "deleted"}),
        ("GET", f"{th}/tasks"): (200, []),
    }


@dataclass
class Seen:
    method: str
    path: str
    query: list[tuple[str, str]]
    body: Any
    token: str | None


@dataclass
class FakeUpstream(FakeServer):
    """An aiohttp app standing in for the platform."""

    replies: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=default_replies)
    requests: list[Seen] = field(default_factory=list)
    default: tuple[int, Any] = (200, {"status": "ok"})

    def record(self, request: web.Request, body: bytes) -> None:
        self.requests.append(
            Seen(
                request.method,
                request.path,
                list(request.query.items()),
                json.loads(body) if body else None,
                request.headers.get("CDN-AUTH-TOKEN"),
            )
        )

    async def answer(self, request: web.Request, body: bytes) -> web.StreamResponse:
        status, payload = self.replies.get((request.method, request.path), self.default)
        if isinstance(payload, bytes):
            return web.Response(status=status, body=payload, content_type="text/plain")
        return web.json_response(payload, status=status)
