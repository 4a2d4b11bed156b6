"""Upstream answers pass through with status and body; no answer gives 502/504 without waiting
for the platform."""

from __future__ import annotations

import asyncio

import pytest

from tests.rig.table import FakeUpstream

from .conftest import Admin, MakeAdmin

TH = "/app/th-api/v1/accounts/demo-media"
SAFETY_SECONDS = 60  # only a broken build waits so long: the test fails instead of hanging


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"status": "ERROR", "message": "wrong task status: canceled"}),
        (403, {"status": "ERROR", "message": "invalid token"}),
        (404, {"status": "ERROR", "message": "There is no such video"}),
        (500, {"status": "ERROR", "message": "boom"}),
        (503, {"status": "ERROR", "message": "unavailable"}),
    ],
)
async def test_upstream_errors_pass_through(
    admin: Admin, status: int, body: dict[str, str]
) -> None:
    admin.upstream.replies[("DELETE", f"{TH}/cancel/task-1")] = (status, body)
    got, data, resp = await admin.call("DELETE", "/talking-head/demo-media/cancel/task-1")
    assert (got, data) == (status, body)
    assert resp.headers["X-Upstream-Status"] == str(status)


async def test_a_2xx_error_body_is_502_naming_the_platform_message(admin: Admin) -> None:
    body = {"status": "error", "message": "Rate limit exceeded"}
    admin.upstream.replies[("DELETE", f"{TH}/cancel/task-1")] = (200, body)
    got, data, resp = await admin.call("DELETE", "/talking-head/demo-media/cancel/task-1")
    assert got == 502
    assert data == {
        "error": "upstream_error_body",
        "message": "the platform answered 200 with an error: Rate limit exceeded",
    }
    assert resp.headers["X-Upstream-Status"] == "200"


async def test_a_2xx_body_that_is_not_json_is_502(admin: Admin) -> None:
    admin.upstream.replies[("GET", f"{TH}/tasks")] = (200, b"{not json")
    got, data, resp = await admin.call("GET", "/talking-head/demo-media/tasks")
    assert got == 502
    assert data["error"] == "upstream_invalid_reply"
    assert resp.headers["X-Upstream-Status"] == "200"


async def test_a_non_json_upstream_body_passes_through_as_text(admin: Admin) -> None:
    admin.upstream.replies[("GET", f"{TH}/tasks")] = (502, b"<html>bad gateway</html>")
    status, data, _ = await admin.call("GET", "/talking-head/demo-media/tasks")
    assert (status, data) == (502, "<html>bad gateway</html>")


async def test_an_empty_upstream_body_passes_through(admin: Admin) -> None:
    admin.upstream.replies[("GET", f"{TH}/tasks")] = (404, b"")
    status, data, _ = await admin.call("GET", "/talking-head/demo-media/tasks")
    assert (status, data) == (404, None)


async def test_upstream_down_is_502_without_a_retry(make_admin: MakeAdmin) -> None:
    admin = await make_admin(base_url="http://127.0.0.1:9")  # discard port: refused
    admin.ctx.client.retries = 2  # as the daemon has it: a GET would be tried three times
    status, data, _ = await admin.call(
        "POST",
        "/talking-head/demo-media/generate",
        json={"script": "hi", "actor": {"name": "N", "shot": "w"}, "voice": "v"},
    )
    assert status == 502
    assert data["error"] == "upstream_unreachable"
    labels = {"area": "talking_head", "code": "connection_error"}
    sent = admin.ctx.metrics.registry.get_sample_value("cdnvideo_upstream_requests_total", labels)
    assert sent == 1  # one attempt: a POST is never retried, so no back-off was waited


async def test_upstream_hanging_is_504_while_it_still_hangs(make_admin: MakeAdmin) -> None:
    upstream = FakeUpstream(hang=True)
    admin = await make_admin(upstream=upstream, timeout=0.3)
    try:
        status, data, _ = await asyncio.wait_for(
            admin.call("GET", "/restream/demo-media/status"), SAFETY_SECONDS
        )
        still_hanging = (len(upstream.requests), upstream.answered)
    finally:
        upstream.release()
    assert (status, data["error"]) == (504, "upstream_timeout")
    assert still_hanging == (1, 0)  # asked once, and the platform had not answered
