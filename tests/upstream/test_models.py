"""Parsing replies: any JSON gives a model or UpstreamError(invalid_body), nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.dvr import reply as dvr_reply
from exporter.restream import reply as restream_reply
from exporter.talking_head import reply as th_reply
from exporter.traffic import reply
from exporter.upstream import models
from exporter.upstream.errors import UpstreamError, body_status, error_message, is_error_body

PARSERS: dict[str, Callable[[Any], object]] = {
    "accounts": models.parse_accounts,
    "token": models.parse_token,
    "metrics": lambda b: reply.parse_metrics(b, per_resource=False),
    "metrics_resources": lambda b: reply.parse_metrics(b, per_resource=True),
    "restream_resources": restream_reply.parse_restream_resources,
    "restream_resource": restream_reply.parse_restream_resource,
    "restream_status": restream_reply.parse_restream_status,
    "restream_history": restream_reply.parse_restream_history,
    "dvr": dvr_reply.parse_dvr_stream,
    "th_configurations": th_reply.parse_th_configurations,
    "th_status": th_reply.parse_th_status,
}

KEYS = [
    "data", "resources", "resource_id", "status", "code", "description", "history", "time",
    "host", "is_alive", "dvr", "enabled", "window", "duration", "from", "ranges", "restreams",
    "schedule", "start", "stop", "source", "target_url", "target_key", "backup", "active",
    "creation_ts", "quota", "limit", "left", "voices", "models", "watermark", "task", "id",
    "attempts", "token", "lifetime", "name", "resource", "resource_name", "cname",
]  # fmt: skip
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.just(""),
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), kids, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(PARSERS)), json_values)
def test_any_json_parses_or_is_invalid_body(parser: str, body: Any) -> None:
    try:
        PARSERS[parser](body)
    except UpstreamError as exc:
        kind = exc.kind
    else:
        kind = "ok"
    assert kind in ("ok", "invalid_body")


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_error_helpers_accept_any_json(body: Any) -> None:
    message = error_message(body)
    assert message is None or isinstance(message, str)
    assert isinstance(is_error_body(body), bool)


@pytest.mark.parametrize(
    ("status", "code"),
    [(" 403 ", 403), ("200", 200), ("\u00b2", None), ("\u0663", None), ("9" * 5000, None)],
    ids=["spaced", "plain", "superscript-two", "arabic-indic-three", "5000-digits"],
)
def test_a_status_written_as_text_counts_only_as_ascii_digits(
    status: str, code: int | None
) -> None:
    """Regression: "\u00b2".isdigit() is true and int() refused it (ValueError, found by the
    property test above), as it refuses more than 4,300 digits."""
    assert body_status({"status": status}) == code
    assert is_error_body({"status": status}) is (code is not None and code == 403)


def test_token_lifetime_is_converted_from_milliseconds() -> None:
    assert models.parse_token({"token": "cdn1_x", "lifetime": 21_599_000}) == ("cdn1_x", 21_599.0)
    assert models.parse_token({"token": "cdn1_x"}) == ("cdn1_x", 21_599.0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"success": False, "code": 400, "message": "Client not found"}, "Client not found"),
        ({"status": "Forbidden", "description": "Token is expired"}, "Token is expired"),
        ({"status": "ERROR", "message": "Invalid account"}, "Invalid account"),
        ({"status": "Failed", "failed_hosts": ["n1"]}, "Failed (failed hosts: n1)"),
        ({"status": "Completed"}, "Completed"),
        ({"detail": "x"}, "x"),
        ([1], None),
        ({}, None),
    ],
)
def test_error_message_of_every_shape(body: Any, message: str | None) -> None:
    assert error_message(body) == message


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"status": "error", "message": "Rate limit exceeded"}, True),
        ({"status": "ERROR", "message": "Invalid account"}, True),
        ({"success": False, "code": 404, "message": "Client not found"}, True),
        ({"success": True, "code": 200, "message": "created"}, False),
        ({"status": "Completed", "data": []}, False),
        ({"status": "ok"}, False),
        ({"person_id": 17, "status": 200, "token": "x"}, False),
        ([], False),
    ],
)
def test_error_bodies_behind_http_200_are_recognised(body: Any, error: bool) -> None:
    assert is_error_body(body) is error
