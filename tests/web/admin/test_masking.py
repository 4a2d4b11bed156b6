"""Secrets are masked in replies; a write that sends the mask back keeps the stored value."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.restream.identity import KeyFingerprint
from exporter.support.logs import MASK
from exporter.support.secrets import (
    QUERY_ALLOWED,
    SECRET_NAMES,
    SECRET_SUFFIXES,
    SECRET_WORDS,
    is_secret_query_name,
)
from exporter.web.admin.restore import restore_secrets
from exporter.web.masking import SecretMask, mask, mask_history
from tests.rig.table import RESOURCE, SECRETS

from .conftest import Admin

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
    fp = admin.ctx.settings.upstream.token.encode()
    assert entry["password"] == f"{MASK}#{KeyFingerprint(fp)('target-password-secret')}"
    assert entry["target_key"] == f"{MASK}#{KeyFingerprint(fp)('stream-key-secret-1')}"
    assert entry["backup"]["password"] == f"{MASK}#{KeyFingerprint(fp)('backup-password-secret')}"
    assert entry["target_url"] == (
        f"rtmp://alice:{MASK}#{KeyFingerprint(fp)('url-secret-pw')}@target.example/app"
    )
    assert entry["login"] == "alice"


async def test_history_keys_are_masked_but_kept_apart(admin: Admin) -> None:
    _, data, _ = await admin.call(
        "GET",
        "/restream/demo-media/history?resource_id=r1&start=2026-01-01T00:00:00Z"
        "&end=2026-01-01T01:00:00Z",
    )
    keys = list(data["data"][0]["history"]["rtmp://target.example/app"])
    # Keyed as the metrics' target_key label is: a guessed key cannot be checked offline.
    keyed = KeyFingerprint(admin.ctx.settings.upstream.token.encode())
    assert keys == [f"{MASK}#{keyed('stream-key-secret-1')}"]
    assert KeyFingerprint()("stream-key-secret-1") not in keys[0]


async def read_back(admin: Admin) -> Any:
    """A copy of resource r1 as the admin API shows it (masked), ready to edit and send back."""
    status, current, _ = await admin.call("GET", "/restream/demo-media/resources/r1")
    assert status == 200, current
    return copy.deepcopy(current["data"])


async def test_put_with_the_mask_keeps_every_stored_secret(admin: Admin) -> None:
    body = await read_back(admin)
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


async def test_a_mask_that_matches_no_stored_secret_is_refused(admin: Admin) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["target_url"] = "rtmp://elsewhere.example/app"
    body["restreams"][0]["password"] = f"{MASK}#0123456789ab"
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 422
    assert data["fields"] == [
        {
            "field": "restreams[0].password",
            "message": f"the mask {MASK}#0123456789ab matches no secret of resource r1; "
            "send the real value",
        }
    ]
    assert [r.method for r in admin.upstream.requests] == ["GET"]  # read, never written


async def test_a_mask_without_its_fingerprint_is_refused(admin: Admin) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["password"] = MASK
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 422
    assert [f["field"] for f in data["fields"]] == ["restreams[0].password"]
    assert [r.method for r in admin.upstream.requests] == ["GET"]


async def test_mask_on_create_is_refused(admin: Admin) -> None:
    body = copy.deepcopy(RESOURCE)
    body["restreams"][0]["target_key"] = f"{MASK}#0123456789ab"
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
    body["restreams"][0]["password"] = f"{MASK}#0123456789ab"
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert (status, data) == (404, {"success": False, "code": 404, "message": "not found"})
    assert [r.method for r in admin.upstream.requests] == ["GET"]


PLAIN = SecretMask(lambda s: s[:1] * 12)


def test_url_masking_hides_only_the_password() -> None:
    assert PLAIN.url("rtmp://u:p@h/app") == f"rtmp://u:{MASK}#pppppppppppp@h/app"
    assert PLAIN.url("rtmp://h/app") == "rtmp://h/app"
    assert PLAIN.url("rtmp://u:@h/app") == "rtmp://u:@h/app"
    assert PLAIN.url("rtmp://u:p@ss@h/a") == f"rtmp://u:{MASK}#pppppppppppp@h/a"
    assert PLAIN.url("see rtmp://u:p@h/a and https://x:y@z/") == (
        f"see rtmp://u:{MASK}#pppppppppppp@h/a and https://x:{MASK}#yyyyyyyyyyyy@z/"
    )


def test_generic_masking_keeps_empty_secrets_visible() -> None:
    data = {"password": "", "token": "t0k3n", "nested": [{"target_key": "k"}], "n": 5}
    assert mask(data, PLAIN) == {
        "password": "",
        "token": f"{MASK}#tttttttttttt",
        "nested": [{"target_key": f"{MASK}#kkkkkkkkkkkk"}],
        "n": 5,
    }


def test_secrets_in_finds_keys_and_url_passwords() -> None:
    from exporter.web.masking import secrets_in

    found = secrets_in(RESOURCE)
    assert set(found) == {
        "alice:url-secret-pw",  # the userinfo, as the metrics' poller learns it too
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


# --- round trips never move a secret to another entry -------------------------------------
def two_channels() -> dict[str, object]:
    """Two YouTube channels: same ingest URL, different stream keys and passwords."""
    resource = copy.deepcopy(RESOURCE)
    first = resource["restreams"][0]  # type: ignore[index]
    first["target_url"] = "rtmp://a.rtmp.youtube.com/live2"
    second = copy.deepcopy(first)
    second["target_key"] = "channel-b-key-2"
    second["password"] = "channel-b-password"
    resource["restreams"] = [first, second]
    return {k: v for k, v in resource.items() if k != "resource_id"}


def with_resource(admin: Admin, data: dict[str, object]) -> None:
    admin.upstream.replies[("GET", f"{RS}/resources/r1")] = (
        200,
        {"account": "demo-media", "resource_id": "r1", "modification_ts": 1, "data": data},
    )


async def test_a_round_trip_keeps_each_channel_its_own_key(admin: Admin) -> None:
    stored = two_channels()
    with_resource(admin, stored)
    body = await read_back(admin)
    body["name"] = "renamed"
    admin.upstream.requests.clear()
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 200, data
    sent = admin.upstream.requests[-1].body
    assert [e["target_key"] for e in sent["restreams"]] == [
        "stream-key-secret-1",
        "channel-b-key-2",
    ]
    assert [e["password"] for e in sent["restreams"]] == [
        "target-password-secret",
        "channel-b-password",
    ]
    assert sent["name"] == "renamed"


async def test_a_mask_follows_its_secret_when_entries_are_reordered(admin: Admin) -> None:
    with_resource(admin, two_channels())
    body = await read_back(admin)
    body["restreams"].reverse()
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 200, data
    sent = admin.upstream.requests[-1].body
    assert [e["target_key"] for e in sent["restreams"]] == [
        "channel-b-key-2",
        "stream-key-secret-1",
    ]


def test_a_fingerprint_shared_by_two_stored_secrets_is_ambiguous() -> None:
    colliding = SecretMask(lambda s: "0" * 12)
    stored = two_channels()
    body = mask(stored, colliding)
    restored, errors = restore_secrets(body, {"data": stored}, colliding, "resource r1")
    assert [e.field for e in errors] == [
        "restreams[0].target_key",
        "restreams[0].password",
        "restreams[1].target_key",
        "restreams[1].password",
    ]
    assert "matches more than one secret of resource r1" in errors[0].message
    # nothing was guessed; the backup password is the same value in both slots
    assert [e["target_key"] for e in restored["restreams"]] == [f"{MASK}#{'0' * 12}"] * 2
    assert [e["backup"]["password"] for e in restored["restreams"]] == [
        "backup-password-secret"
    ] * 2


# --- masking by field, never by substring ---------------------------------------------------
async def test_a_key_inside_another_entrys_url_is_not_masked_there(admin: Admin) -> None:
    stored = two_channels()
    stored["restreams"][1]["target_url"] = "rtmp://ingest.example/app/stream-key-secret-1"  # type: ignore[index]
    stored["restreams"][1]["source"] = "rtmp://live@origin.example/live/main"  # type: ignore[index]
    with_resource(admin, stored)
    _, current, _ = await admin.call("GET", "/restream/demo-media/resources/r1")
    second = current["data"]["restreams"][1]
    assert second["target_url"] == "rtmp://ingest.example/app/stream-key-secret-1"
    assert second["source"] == "rtmp://live@origin.example/live/main"
    body = copy.deepcopy(current["data"])
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 200, data
    sent = admin.upstream.requests[-1].body
    assert MASK not in json.dumps(sent)
    assert sent["restreams"] == stored["restreams"]


async def test_a_bare_url_user_name_is_no_secret(admin: Admin) -> None:
    stored = two_channels()
    stored["restreams"][0]["source"] = "rtmp://live@origin.example/live/main"  # type: ignore[index]
    with_resource(admin, stored)
    await admin.call("GET", "/restream/demo-media/resources/r1")
    _, dvr, _ = await admin.call("GET", "/dvr/demo-media/streams/live/main")
    assert dvr["stream_name"] == "live/main"
    assert admin.ctx.redactor.text("stream live/main") == "stream live/main"


async def test_a_mask_where_no_secret_can_be_restored_is_refused(admin: Admin) -> None:
    body = await read_back(admin)
    body["restreams"][0]["backup"]["target_url"] = f"rtmp://backup.example/app/{MASK}"
    body["name"] = f"main {MASK}"
    admin.upstream.requests.clear()
    status, data, _ = await admin.call("PUT", "/restream/demo-media/resources/r1", json=body)
    assert status == 422
    # The backup's path changed too, so its password's mask stands for another site now.
    fields = {f["field"]: f["message"] for f in data["fields"]}
    assert list(fields) == [
        "restreams[0].backup.password",
        "name",
        "restreams[0].backup.target_url",
    ]
    assert "another entry, field or host" in fields["restreams[0].backup.password"]
    assert "only as the whole value of a secret field" in fields["name"]
    assert [r.method for r in admin.upstream.requests] == ["GET"]


def test_history_hides_passwords_of_target_urls_used_as_keys() -> None:
    reply = {"data": [{"history": {"rtmp://u:pw-in-key@h/app": {"k1": []}}}]}
    assert mask_history(reply, PLAIN) == {
        "data": [{"history": {f"rtmp://u:{MASK}#pppppppppppp@h/app": {f"{MASK}#kkkkkkkkkkkk": []}}}]
    }


def test_every_mask_carries_a_twelve_digit_fingerprint() -> None:
    masks = SecretMask(KeyFingerprint(b"k"))
    text = json.dumps(mask(RESOURCE, masks))
    assert re.findall(r"\*{8}(?!#[0-9a-f]{12})", text) == []


async def test_only_writes_the_platform_accepted_teach_the_redactor(admin: Admin) -> None:
    refused = copy.deepcopy(RESOURCE)
    refused["restreams"][0]["target_key"] = "invalid-body-key-1"
    refused["active"] = "yes"  # fails validation: nothing sent, nothing learned
    status, _, _ = await admin.call("POST", "/restream/demo-media/resources", json=refused)
    assert status == 422
    admin.upstream.replies[("POST", f"{RS}/resources")] = (
        400,
        {"success": False, "code": 400, "message": "bad"},
    )
    rejected = copy.deepcopy(RESOURCE)
    rejected["restreams"][0]["target_key"] = "platform-refused-key-2"
    status, _, _ = await admin.call("POST", "/restream/demo-media/resources", json=rejected)
    assert status == 400
    poisoned = {"password": "event", "restreams": []}
    await admin.call("POST", "/restream/demo-media/resources", json=poisoned)
    text = "invalid-body-key-1 platform-refused-key-2 event"
    assert admin.ctx.redactor.text(text) == text


# --- masking by meaning: the redactor's notion of a secret, any value under it ---------------
PREFIXES = st.sampled_from(["", "new_", "old-", "client_", "Backup.", "x_", "primary"])
SECRET_ENDINGS = st.sampled_from(
    ["password", "_key", "token", "secret", "passphrase", "passwd", "_sig", "signature"]
)
SECRET_NAME = st.one_of(
    st.builds(lambda p, s: p + s, PREFIXES, SECRET_ENDINGS),
    st.sampled_from(["key", "auth", "target_key", "stream_key", "streamid", "Authorization"]),
)
PLAIN_NAME = st.from_regex(r"[a-z]{1,8}", fullmatch=True).filter(
    lambda n: not any(w in n for w in ("key", "token", "secret", "pass", "auth", "sig"))
)
SECRET_INT = st.integers(10**9, 10**10)
PLANTED = st.from_regex(r"PLANTED[0-9]{1,4}", fullmatch=True)
# A secret: a string, a number, or a list or object of them, however it is nested.
SECRET_VALUE = st.recursive(
    st.one_of(PLANTED, SECRET_INT),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(PLAIN_NAME, inner, min_size=1, max_size=3),
    ),
    max_leaves=6,
)
URL_WITH_SECRETS = st.builds(
    lambda s, t: f"srt://h.example:9000?streamid={s}&passphrase={t}&latency=120",
    PLANTED,
    PLANTED,
) | st.builds(lambda t: f"rtmp://u:{t}@h.example/app?token={t}", PLANTED)
PLAIN_LEAF = st.one_of(st.integers(0, 1000), st.from_regex(r"[a-z ]{0,12}", fullmatch=True))
BODY = st.recursive(
    st.one_of(PLAIN_LEAF, URL_WITH_SECRETS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(PLAIN_NAME, inner, max_size=3),
        st.dictionaries(SECRET_NAME, SECRET_VALUE, min_size=1, max_size=2),
        st.builds(
            lambda a, b: {**a, **b},
            st.dictionaries(PLAIN_NAME, inner, max_size=2),
            st.dictionaries(SECRET_NAME, SECRET_VALUE, max_size=2),
        ),
    ),
    max_leaves=12,
)


def _ints(value: Any) -> set[int]:
    if isinstance(value, dict):
        return {i for v in value.values() for i in _ints(v)}
    if isinstance(value, list):
        return {i for v in value for i in _ints(v)}
    return {value} if isinstance(value, int) and value >= 10**9 else set()


@settings(max_examples=300, deadline=None)
@given(body=BODY)
def test_no_secret_of_a_nested_body_survives_masking(body: Any) -> None:
    masks = SecretMask(KeyFingerprint(b"k"))
    reply = json.dumps(mask(body, masks))
    assert "PLANTED" not in reply
    for number in _ints(body):
        assert str(number) not in reply


def test_a_list_or_object_under_a_secret_name_is_masked_to_its_leaves() -> None:
    data = {"new_password": ["a1", {"x": "b2"}], "client_key": {"v": 7}, "api_token": True}
    assert mask(data, PLAIN) == {
        "new_password": [f"{MASK}#aaaaaaaaaaaa", {"x": f"{MASK}#bbbbbbbbbbbb"}],
        "client_key": {"v": MASK},
        "api_token": MASK,
    }


async def test_a_reply_with_secrets_under_new_names_is_masked(admin: Admin) -> None:
    reply = {
        "data": {
            "resources": [
                {"new_password": "np-planted-1", "extra": {"client_key": ["ck-planted-2"]}},
                {"target_url": "srt://h.example:9000?streamid=sid-planted-3&latency=120"},
            ]
        }
    }
    admin.upstream.replies[("GET", f"{RS}/resources")] = (200, reply)
    status, data, _ = await admin.call("GET", "/restream/demo-media/resources")
    assert status == 200
    text = json.dumps(data)
    assert "planted" not in text
    assert "latency=120" in text


def test_the_documented_secret_rules_are_the_codes() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "admin-api.md").read_text()
    section = doc.split("## Secrets in answers", 1)[1].split("\n## ", 1)[0]
    for name in (*QUERY_ALLOWED, *SECRET_NAMES, *SECRET_WORDS):
        assert f"`{name}`" in section, name
    for suffix in SECRET_SUFFIXES:
        assert f"`{suffix}`" in section, suffix
    # An allowed query name never looks like a credential.
    assert not [n for n in QUERY_ALLOWED if any(w in n for w in SECRET_WORDS)]
    assert not [n for n in QUERY_ALLOWED if is_secret_query_name(n)]


def test_history_keys_hide_query_secrets_and_keep_the_points() -> None:
    point = {"code": 0, "description": "OK", "time": 1}
    reply = {"data": [{"history": {"rtmp://h/app?token=t1&vhost=v": {"k1": [point]}}}]}
    assert mask_history(reply, PLAIN) == {
        "data": [
            {
                "history": {
                    f"rtmp://h/app?token={MASK}#tttttttttttt&vhost=v": {
                        f"{MASK}#kkkkkkkkkkkk": [point]
                    }
                }
            }
        ]
    }
