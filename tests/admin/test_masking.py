"""Secrets are masked in replies; a write that sends the mask back keeps the stored value."""

from __future__ import annotations

import copy
import json

from exporter.logs import MASK
from exporter.web.admin.masking import mask, mask_url

from .conftest import Admin
from .fakes import RESOURCE, SECRETS

RS = "/app/restream/v2/demo-media"


async def test_list_get_status_and_history_hide_every_secret(admin: Admin) -> None:
    paths = [
        "/restream/demo-media/resources",
        "/restream/demo-media/resources/r1",
        "/restream/demo-media/status",
        "/restream/demo-media/history?resource_id=r1&start=2026-01-01T00:00:00Z"
        "&end=2026-01-01T01:00:00Z",
    ]
    for path in paths:
        status, data, _ = await admin.call("GET", path)
        assert status == 200
        text = json.dumps(data)
        for secret in SECRETS:
            assert secret not in text, (path, secret)
    _, data, _ = await admin.call("GET", "/restream/demo-media/resources/r1")
    entry = data["data"]["restreams"][0]
    assert entry["password"] == MASK
    assert entry["target_key"] == MASK
    assert entry["backup"]["password"] == MASK
    assert entry["target_url"] == f"rtmp://alice:{MASK}@target.example/app"
    assert entry["login"] == "alice"


async def test_history_keys_are_masked_but_kept_apart(admin: Admin) -> None:
    _, data, _ = await admin.call(
        "GET",
        "/restream/demo-media/history?resource_id=r1&start=2026-01-01T00:00:00Z"
        "&end=2026-01-01T01:00:00Z",
    )
    keys = list(data["data"][0]["history"]["rtmp://target.example/app"])
    assert len(keys) == 1
    assert keys[0].startswith(MASK + "#")


async def test_put_with_the_mask_keeps_every_stored_secret(admin: Admin) -> None:
    _, current, _ = await admin.call("GET", "/restream/demo-media/resources/r1")
    body = copy.deepcopy(current["data"])
    body["name"] = "renamed"
    admin.upstream.requests.clear()
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 200, data
    get, put = admin.upstream.requests
    assert (get.method, get.path) == ("GET", f"{RS}/resources/r1")
    assert (put.method, put.path) == ("PUT", f"{RS}/resources/r1")
    sent = put.body["restreams"][0]
    stored = RESOURCE["restreams"][0]
    assert sent["password"] == stored["password"]
    assert sent["target_key"] == stored["target_key"]
    assert sent["target_url"] == stored["target_url"]
    assert sent["backup"]["password"] == stored["backup"]["password"]
    assert put.body["name"] == "renamed"
    assert MASK not in json.dumps(put.body)


async def test_put_with_new_secrets_sends_them_without_reading_first(admin: Admin) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["password"] = "brand-new"
    status, _, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 200
    assert [r.method for r in admin.upstream.requests] == ["PUT"]
    assert admin.upstream.requests[0].body["restreams"][0]["password"] == "brand-new"


async def test_mask_on_an_entry_that_is_not_stored_is_refused(admin: Admin) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["target_url"] = "rtmp://elsewhere.example/app"
    body["restreams"][0]["password"] = MASK
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 422
    assert [f["field"] for f in data["fields"]] == ["restreams[0].password"]
    assert [r.method for r in admin.upstream.requests] == ["GET"]  # read, never written


async def test_mask_on_create_is_refused(admin: Admin) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["target_key"] = MASK
    status, data, _ = await admin.call("POST", "/restream/demo-media/resources", json=body)
    assert status == 422
    assert [f["field"] for f in data["fields"]] == ["restreams[0].target_key"]
    assert admin.upstream.requests == []


async def test_put_when_the_resource_cannot_be_read_passes_that_answer_on(admin: Admin) -> None:
    admin.upstream.replies[("GET", f"{RS}/resources/r1")] = (
        404,
        {"success": False, "code": 404, "message": "not found"},
    )
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["password"] = MASK
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert (status, data) == (404, {"success": False, "code": 404, "message": "not found"})
    assert [r.method for r in admin.upstream.requests] == ["GET"]


def test_mask_url_hides_only_the_password() -> None:
    assert mask_url("rtmp://u:p@h/app") == f"rtmp://u:{MASK}@h/app"
    assert mask_url("rtmp://h/app") == "rtmp://h/app"
    assert mask_url("see rtmp://u:p@h/a and https://x:y@z/") == (
        f"see rtmp://u:{MASK}@h/a and https://x:{MASK}@z/"
    )


def test_generic_masking_keeps_empty_secrets_visible() -> None:
    assert mask({"password": "", "token": "t0k3n", "nested": [{"target_key": "k"}]}) == {
        "password": "",
        "token": MASK,
        "nested": [{"target_key": MASK}],
    }


def test_secrets_in_finds_keys_and_url_passwords() -> None:
    from exporter.web.admin.masking import secrets_in

    found = secrets_in(RESOURCE)
    assert set(found) == {
        "url-secret-pw",
        "stream-key-secret-1",
        "target-password-secret",
        "backup-password-secret",
    }


async def test_secrets_seen_by_the_admin_surface_are_taught_to_the_log_redactor(
    admin: Admin,
) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["target_key"] = "caller-sent-key-42"
    await admin.call("POST", "/restream/demo-media/resources", json=body)
    await admin.call("GET", "/restream/demo-media/resources/r1")
    text = admin.ctx.redactor.text("keys caller-sent-key-42 and stream-key-secret-1")
    assert "caller-sent-key-42" not in text
    assert "stream-key-secret-1" not in text
