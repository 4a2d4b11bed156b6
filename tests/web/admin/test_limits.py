"""Oversized and over-deep bodies answer as limits (413, 400), never as internal errors."""

from __future__ import annotations

from typing import Any

import aiohttp

from .conftest import Admin


async def send_raw(
    admin: Admin, method: str, path: str, body: str | bytes
) -> tuple[int, Any, aiohttp.ClientResponse]:
    headers = {"Content-Type": "application/json"}
    return await admin.call(method, path, data=body, headers=headers)


async def test_a_body_over_the_size_limit_is_413_and_nothing_goes_upstream(admin: Admin) -> None:
    body = b'{"name": "' + b"x" * (1024**2 + 10) + b'"}'
    status, data, _ = await send_raw(admin, "POST", "/restream/demo-media/resources", body)
    assert status == 413
    assert data["error"] == "body_too_large"
    assert "1048576 bytes" in data["message"]
    assert admin.upstream.requests == []


async def test_json_nested_too_deep_is_400_naming_the_limit(admin: Admin) -> None:
    depth = 500
    body = '{"name": "x", "restreams": ' + "[" * depth + "]" * depth + "}"
    status, data, _ = await send_raw(admin, "POST", "/restream/demo-media/resources", body)
    assert status == 400
    assert data["fields"] == [{"field": "body", "message": "JSON nested deeper than 32 levels"}]
    assert admin.upstream.requests == []


async def test_json_at_the_depth_limit_is_still_read(admin: Admin) -> None:
    """32 levels are parsed and checked field by field (here: an unknown field, 422), not 400."""
    head = '{"name": "x", "type": "short", "active": true, "restreams": [], '
    body = head + '"extra": ' + "[" * 31 + "]" * 31 + "}"
    status, data, _ = await send_raw(admin, "PUT", "/restream/demo-media/resources/r1", body)
    assert status == 422
    assert [f["field"] for f in data["fields"]] == ["extra"]
    assert admin.upstream.requests == []


async def test_a_key_twice_in_one_object_is_400_naming_it(admin: Admin) -> None:
    """json.loads keeps the last of two equal keys; a validator and a proxy may read the first:
    the body is refused instead of guessed at."""
    body = '{"name": "x", "restreams": [{"target_key": "a", "target_key": "b"}], "active": true}'
    status, data, _ = await send_raw(admin, "PUT", "/restream/demo-media/resources/r1", body)
    assert status == 400
    assert data["fields"] == [
        {
            "field": "body",
            "message": "the key 'target_key' appears twice in one object; send it once",
        }
    ]
    assert admin.upstream.requests == []
