"""Parsing replies: any JSON gives a model or UpstreamError(invalid_body), nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.traffic import reply
from exporter.upstream import models
from exporter.upstream.errors import UpstreamError, error_message, is_error_body

PARSERS: dict[str, Callable[[Any], object]] = {
    "accounts": models.parse_accounts,
    "token": models.parse_token,
    "metrics": lambda b: reply.parse_metrics(b, per_resource=False),
    "metrics_resources": lambda b: reply.parse_metrics(b, per_resource=True),
    "restream_resources": models.parse_restream_resources,
    "restream_resource": models.parse_restream_resource,
    "restream_status": models.parse_restream_status,
    "restream_history": models.parse_restream_history,
    "dvr": models.parse_dvr_stream,
    "th_configurations": models.parse_th_configurations,
    "th_status": models.parse_th_status,
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


def test_a_consumed_metrics_body_gives_the_same_rows_without_copies() -> None:
    """The read step's decoded reply is taken over row by row (no second set of dicts at the
    peak of a traffic poll); the rows are the same as parsed from a copy."""

    def body() -> dict[str, Any]:
        data = [
            {"resource": 7, "resource_name": None, "cname": "c", "edge_requests_total": 1},
            {"resource": "r2", "resource_name": "two", "edge_status_200": "3"},
        ]
        return {"start": "s", "end": "e", "account": "acme", "data": data}

    consumed = body()
    rows = consumed["data"]
    taken = reply.parse_metrics(consumed, per_resource=True)
    assert taken == reply.parse_metrics(body(), per_resource=True)
    assert taken.rows[0] == reply.MetricsRow({"edge_requests_total": 1}, "7", "", "c")
    assert taken.rows[0].values is rows[0]  # the decoded object itself, keys taken out
    assert taken.rows[1].values is rows[1]
    totals = reply.parse_metrics({"data": [{"edge_requests_total": 2}]}, False)
    assert totals.rows[0].values == {"edge_requests_total": 2}


def test_token_lifetime_is_converted_from_milliseconds() -> None:
    assert models.parse_token({"token": "cdn1_x", "lifetime": 21_599_000}) == ("cdn1_x", 21_599.0)
    assert models.parse_token({"token": "cdn1_x"}) == ("cdn1_x", 21_599.0)


def test_task_status_is_lower_cased() -> None:
    task = models.parse_th_status({"status": "ok", "task": {"id": "t", "status": " CANCELED "}})
    assert (task.status, task.attempts, task.message) == ("canceled", 0, "")


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


def _status_reply(code: Any) -> dict[str, Any]:
    entry = {"source": "s", "target_url": "rtmp://h/app", "target_key": "k"}
    return {"data": [{"resource_id": "1", "status": [{**entry, "status": {"code": code}}]}]}


def _history_reply(code: Any, time: Any) -> dict[str, Any]:
    point = {"code": code, "description": "", "time": time}
    return {"data": [{"source": "s", "history": {"rtmp://h/app": {"k": [point]}}}]}


@pytest.mark.parametrize(
    ("parse", "reply"),
    [
        (models.parse_restream_status, _status_reply(10**400)),
        (models.parse_restream_status, _status_reply(-(2**31))),
        (models.parse_restream_history, _history_reply(10**400, 1_767_225_600)),
        (models.parse_restream_history, _history_reply(2, 1e300)),
        (models.parse_restream_history, _history_reply(2, -1)),
    ],
    ids=[
        "status-code-past-floats",
        "status-code-past-32-bits",
        "history-code",
        "time",
        "before-1970",
    ],
)
def test_absurd_restream_codes_and_times_are_invalid_bodies(
    parse: Callable[[Any], object], reply: dict[str, Any]
) -> None:
    """Regression: an integer past the float range reached a gauge as OverflowError, and a
    time past year 9999 broke the history key, instead of failing the poll as invalid_body."""
    with pytest.raises(UpstreamError) as failed:
        parse(reply)
    assert failed.value.kind == "invalid_body"


def test_ordinary_restream_codes_and_times_parse() -> None:
    (record,) = models.parse_restream_status(_status_reply(5))
    assert record.targets[0].code == 5
    (point,) = models.parse_restream_history(_history_reply(7, 1_767_225_600))
    assert (point.code, point.time) == (7, 1_767_225_600.0)
