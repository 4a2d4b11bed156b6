"""Edges of admin masking that `make mutation` found untested: the exporter's own credentials
inside other text, secrets that are not strings, odd history shapes, and where a mask that
cannot be restored is reported."""

from __future__ import annotations

from typing import Any

from exporter.restream.identity import KeyFingerprint
from exporter.support.logs import MASK
from exporter.web.admin.restore import has_mask, restore_secrets
from exporter.web.masking import SecretMask, mask, mask_history, secrets_in

PLAIN = SecretMask(lambda s: s[:1] * 12)  # the fingerprint of "pw" is "pppppppppppp"
TOKEN = "platform-token-8c1e"  # the exporter's own credential
KEYED = SecretMask(KeyFingerprint(b"k"))  # hex fingerprints, as restore_secrets reads them
PW = f"{MASK}#{KEYED.fingerprint('pw')}"


def test_the_exporters_credentials_are_masked_inside_any_text() -> None:
    masks = SecretMask(PLAIN.fingerprint, [TOKEN, "short7!"])
    reply = {"note": f"created with {TOKEN} by {TOKEN}", "name": "short7! stays"}
    assert mask(reply, masks) == {"note": f"created with {MASK} by {MASK}", "name": "short7! stays"}


def test_a_credential_of_exactly_eight_characters_is_masked() -> None:
    masks = SecretMask(PLAIN.fingerprint, ["8chars!!"])
    assert mask({"note": "x 8chars!! y"}, masks) == {"note": f"x {MASK} y"}


def test_a_secret_field_that_is_not_a_string_is_masked_and_null_stays_visible() -> None:
    reply: dict[str, Any] = {"password": 81726354, "token": None}
    masked = mask(reply, PLAIN)
    assert "81726354" not in str(masked)
    assert MASK in str(masked["password"])
    assert masked["token"] is None  # "no token" stays visible


def test_masked_or_empty_stored_values_are_no_secrets() -> None:
    stored = {"password": "", "token": f"{MASK}#pppppppppppp", "target_key": "real-key"}
    assert secrets_in(stored) == ["real-key"]


def test_a_mask_in_a_key_counts_as_a_mask() -> None:
    assert has_mask({f"{MASK}#kkkkkkkkkkkk": 1}) is True
    assert has_mask({"plain": [1, "x"]}) is False


def test_history_of_odd_shapes_is_masked_where_it_can_be_and_kept_otherwise() -> None:
    url = "rtmp://u:pw@h/app"
    reply = {
        "data": [
            "not an entry",
            {"history": None},
            {"history": {url: ["k1"]}},
            {"history": {url: {"k1": []}}},
        ]
    }
    assert mask_history(reply, PLAIN) == {
        "data": [
            "not an entry",
            {"history": None},
            {"history": {f"rtmp://u:{MASK}#pppppppppppp@h/app": ["k1"]}},
            {"history": {f"rtmp://u:{MASK}#pppppppppppp@h/app": {f"{MASK}#kkkkkkkkkkkk": []}}},
        ]
    }
    assert mask_history([{"password": "pw"}], PLAIN) == [{"password": f"{MASK}#pppppppppppp"}]


def test_a_url_password_in_a_list_is_restored() -> None:
    stored = {"urls": ["rtmp://u:pw@h/app"]}
    body = {"urls": [f"rtmp://u:{PW}@h/app", "plain"]}
    assert restore_secrets(body, stored, KEYED) == ({"urls": ["rtmp://u:pw@h/app", "plain"]}, [])


def test_an_unknown_url_mask_is_kept_as_sent_and_reported_at_its_field() -> None:
    sent = f"rtmp://u:{MASK}#abcdefabcdef@h/app"
    restored, errors = restore_secrets({"entry": {"target_url": sent}}, {}, KEYED)
    assert restored == {"entry": {"target_url": sent}}
    assert [e.field for e in errors] == ["entry.target_url"]
    assert errors[0].message == (
        f"the mask {MASK}#abcdefabcdef matches no secret of the stored resource; "
        "send the real value"
    )


def test_a_mask_used_as_a_key_is_refused_at_that_key() -> None:
    body = {"entry": {f"{MASK}#pppppppppppp": "x"}}
    _, errors = restore_secrets(body, {"password": "pw"}, PLAIN)
    assert [e.field for e in errors] == [f"entry.{MASK}#pppppppppppp"]
    assert "only as the whole value of a secret field" in errors[0].message
