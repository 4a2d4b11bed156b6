"""Every change is one structured ``audit`` event: who, what, outcome; never a secret."""

from __future__ import annotations

import copy
import io
import json
import re

import structlog
from structlog.testing import capture_logs

from exporter.support.logs import MASK, configure_logging
from tests.rig.table import READ_TOKEN, RESOURCE, SECRETS

from .conftest import Admin, MakeAdmin

RS = "/app/restream/v2/demo-media"


def audits(logs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in logs if e["event"] == "audit"]


async def test_a_successful_change_is_audited(admin: Admin) -> None:
    with capture_logs() as logs:
        await admin.call(
            "DELETE",
            "/dvr/demo-media/streams/live/main",
            json={"host": "*", "from_ts": 1, "duration_sec": 5},
        )
    (event,) = audits(logs)
    assert event["route"] == "DELETE /api/v1/dvr/{account}/streams/{stream_name}"
    assert event["operation"] == "dvr_delete"
    assert event["account"] == "demo-media"
    assert event["target"] == "live/main"
    assert event["role"] == "write"
    assert event["upstream_status"] == 200
    assert event["status"] == 200
    assert event["outcome"] == "ok"


async def test_refused_and_failed_changes_are_audited_too(admin: Admin) -> None:
    admin.upstream.replies[("DELETE", "/app/th-api/v1/accounts/demo-media/video/task-1")] = (
        404,
        {"status": "ERROR", "message": "There is no such video"},
    )
    with capture_logs() as logs:
        await admin.call("DELETE", "/talking-head/demo-media/video/task-1", token=None)
        await admin.call("DELETE", "/talking-head/demo-media/video/task-1", token=READ_TOKEN)
        await admin.call("PATCH", "/talking-head/demo-media/video/task-1", json={"x": 1})
        await admin.call("DELETE", "/talking-head/demo-media/video/task-1")
    got = [(e["role"], e["outcome"], e["status"], e["upstream_status"]) for e in audits(logs)]
    assert got == [
        ("none", "unauthenticated", 401, None),
        ("read", "forbidden", 403, None),
        ("write", "invalid_request", 422, None),
        ("write", "upstream_error", 404, 404),
    ]


async def test_reads_are_not_audited(admin: Admin) -> None:
    with capture_logs() as logs:
        await admin.call("GET", "/restream/demo-media/resources")
    assert audits(logs) == []


async def test_create_and_generate_record_the_new_id(admin: Admin) -> None:
    with capture_logs() as logs:
        body = {"name": "x", "type": "short", "active": True, "restreams": []}
        await admin.call("POST", "/restream/demo-media/resources", json=body)
        await admin.call(
            "POST",
            "/talking-head/demo-media/generate",
            json={"script": "hi", "actor": {"name": "N", "shot": "w"}, "voice": "v"},
        )
    assert [e["target"] for e in audits(logs)] == ["r2", "task-1"]


async def test_audit_log_carries_no_secret(admin: Admin) -> None:
    """Through the real JSON log pipeline, with a mask-keeping PUT and a password change."""
    stream = io.StringIO()
    configure_logging("info", "json", admin.ctx.redactor, stream=stream)
    try:
        _, current, _ = await admin.call("GET", "/restream/demo-media/resources/r1")
        await admin.call("PUT", "/restream/demo-media/resources/r1", json=current["data"])
        body = copy.deepcopy(RESOURCE)
        body["restreams"][0]["password"] = "fresh-password-secret"
        await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
        await admin.call("POST", "/restream/demo-media/resources", json=body)
    finally:
        structlog.reset_defaults()
    text = stream.getvalue()
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["operation"] for e in events if e["msg"] == "audit"] == [
        "restream_update",
        "restream_update",
        "restream_create",
    ]
    for secret in (*SECRETS, "fresh-password-secret"):
        assert secret not in text
    assert MASK not in text  # nothing secret-shaped was even logged


async def test_upstream_down_is_audited_as_unreachable(make_admin: MakeAdmin) -> None:
    admin = await make_admin(base_url="http://127.0.0.1:9")
    with capture_logs() as logs:
        await admin.call("DELETE", "/talking-head/demo-media/cancel/t")
    (event,) = audits(logs)
    assert (event["outcome"], event["status"], event["target"]) == (
        "upstream_unreachable",
        502,
        "t",
    )


async def test_an_audit_line_keeps_its_structure_whatever_a_body_held(admin: Admin) -> None:
    """A body's secrets equal to the account name and the role word are learned, and still
    the audit line names account, route and role in clear."""
    stream = io.StringIO()
    configure_logging("info", "json", admin.ctx.redactor, stream=stream)
    try:
        body = copy.deepcopy(RESOURCE)
        body["restreams"][0]["password"] = "demo-media"
        body["restreams"][0]["target_key"] = "write"
        await admin.call("POST", "/restream/demo-media/resources", json=body)
        await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    finally:
        structlog.reset_defaults()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    got = [(e["account"], e["role"], e["route"]) for e in events if e["msg"] == "audit"]
    assert got == [
        ("demo-media", "write", "POST /api/v1/restream/{account}/resources"),
        ("demo-media", "write", "PUT /api/v1/restream/{account}/resources/{resource_id}"),
    ]
    assert admin.ctx.redactor.text("key write") == f"key {MASK}"  # free text: still masked


# Each character that could split a line or drive a terminal, and how logfmt must show it.
CONTROLS = {
    "\r": "\\r",
    "\n": "\\n",
    "\x1b": "\\x1b",
    "\x00": "\\x00",
    "\x7f": "\\x7f",
    "\x85": "\\x85",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


async def test_logfmt_audit_lines_cannot_be_split(make_admin: MakeAdmin) -> None:
    """Through a request path, a header and a reply body into the audit line: one record per
    line, every control character escaped."""
    admin = await make_admin(trusted_proxy_header="X-Forwarded-For")
    stream = io.StringIO()
    configure_logging("info", "logfmt", admin.ctx.redactor, stream=stream)
    forged = " event=audit role=write status=200"
    generate = ("POST", "/app/th-api/v1/accounts/demo-media/generate")
    body = {
        "script": "Hello there",
        "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
        "voice": "Alena",
    }
    sent = 0
    try:
        for char in CONTROLS:
            quoted = "%" + "%".join(f"{b:02X}" for b in char.encode())
            # the path: an account segment, answered 401 without a token
            await admin.call("DELETE", f"/dvr/x{quoted}{forged}/streams/s", token=None)
            # a header: the HTTP client and parser refuse C0 controls and DEL, not C1 ones
            if char == "\x85":
                headers = {"X-Forwarded-For": f"10.0.0.1{char}{forged}"}
                await admin.call("DELETE", "/dvr/x/streams/s", token=None, headers=headers)
                sent += 1
            # a body: the platform's reply names the task
            admin.upstream.replies[generate] = (202, {"status": "ok", "id": f"t{char}{forged}"})
            admin.clock.advance(60)  # the generate limit is per minute
            status, _, _ = await admin.call("POST", "/talking-head/demo-media/generate", json=body)
            assert status == 202
            sent += 2
    finally:
        structlog.reset_defaults()
    lines = [line for line in stream.getvalue().split("\n") if line]
    audit_lines = [line for line in lines if re.match(r"ts=\S+ level=\S+ msg=audit ", line)]
    assert len(audit_lines) == sent  # no record split in two, none forged
    assert all(line.startswith("ts=") for line in lines)
    text = stream.getvalue()
    for char, escaped in CONTROLS.items():
        if char != "\n":  # line breaks end records: counted above
            assert char not in text
        assert escaped in text
