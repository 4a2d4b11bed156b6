"""The restream replies' parsing (exporter/restream/reply.py): values a gauge cannot hold are
invalid bodies, ordinary ones parse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from exporter.restream import reply as restream_reply
from exporter.upstream.errors import UpstreamError


def _status_reply(code: Any) -> dict[str, Any]:
    entry = {"source": "s", "target_url": "rtmp://h/app", "target_key": "k"}
    return {"data": [{"resource_id": "1", "status": [{**entry, "status": {"code": code}}]}]}


def _history_reply(code: Any, time: Any) -> dict[str, Any]:
    point = {"code": code, "description": "", "time": time}
    return {"data": [{"source": "s", "history": {"rtmp://h/app": {"k": [point]}}}]}


@pytest.mark.parametrize(
    ("parse", "reply"),
    [
        (restream_reply.parse_restream_status, _status_reply(10**400)),
        (restream_reply.parse_restream_status, _status_reply(-(2**31))),
        (restream_reply.parse_restream_history, _history_reply(10**400, 1_767_225_600)),
        (restream_reply.parse_restream_history, _history_reply(2, 1e300)),
        (restream_reply.parse_restream_history, _history_reply(2, -1)),
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
    (record,) = restream_reply.parse_restream_status(_status_reply(5))
    assert record.targets[0].code == 5
    (point,) = restream_reply.parse_restream_history(_history_reply(7, 1_767_225_600))
    assert (point.code, point.time) == (7, 1_767_225_600.0)
