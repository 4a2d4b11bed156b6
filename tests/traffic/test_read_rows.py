"""A large reply's rows are parsed as they are decoded (``Reader.halves``): the same rows,
dropped values and errors as the same body decoded whole by the transport, and no row's
decoded object kept beyond its own row."""

from __future__ import annotations

import copy
import gc
import json
from typing import Any

import pytest

from exporter.support.clock import FakeClock
from exporter.traffic import parse
from exporter.traffic.read import Reader
from exporter.traffic.reply import Answer
from exporter.traffic.select import ResourceSelector
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.skew import Clocks
from exporter.traffic.windows import Window
from exporter.upstream.client import UpstreamClient
from exporter.upstream.errors import UpstreamError
from exporter.upstream.reply import Reply

ACCOUNT = "acme"
W = Window(1_767_225_600, 1_767_225_660)
ROWS = 2000
MARK = "read_rows_test_mark"  # a key no other dict in the process has


class Rejected:
    """``values_rejected``: the fields counted, in order."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def labels(self, area: str, field: str) -> Rejected:
        self.fields.append(field)
        return self

    def inc(self) -> None:
        pass


class Metrics:
    def __init__(self) -> None:
        self.values_rejected = Rejected()


class Transport:
    """What the read step asks of the client about a body it decodes itself."""

    @staticmethod
    def checked(area: str, reply: Reply) -> Any:
        return UpstreamClient.checked(None, area, reply)  # type: ignore[arg-type]

    @staticmethod
    def verdict(area: str, reply: Reply, data: Any) -> bool:
        return False


def reader(metrics: Metrics) -> Reader:
    clock = FakeClock()
    return Reader(
        None,  # type: ignore[arg-type]
        Clocks(clock, metrics),  # type: ignore[arg-type]
        ResourceSelector("", "", 0),
        TrafficSettings(delay_seconds=120, revisit_minutes=5),
        metrics,  # type: ignore[arg-type]
        clock,
    )


def row(i: int) -> dict[str, Any]:
    """Rows of every shape: numbers, numeric strings, nested and flat medians, a bad gauge
    now and then, an id seen twice now and then."""
    r: dict[str, Any] = {
        "resource": f"r{i - 1 if i % 97 == 1 else i}",
        "resource_name": f"site{i}",
        "cname": f"c{i}.example" if i % 3 else None,
        "edge_requests_total": i,
        "origin_requests_total": str(i * 2),
        "edge_status_2xx": i,
        "edge_bandwidth": i * 8.5,
        "edge_hit_ratio": "n/a" if i % 250 == 7 else 0.5,
        "edge_request_time": {"0_250k": i / 10, "4M+": None},
        "origin_request_time_1M_2M": "bad" if i % 400 == 3 else 0.25,
        MARK: i,
    }
    return r


def body(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "account": ACCOUNT,
        "metrics": [],
        "data": [row(i) for i in range(ROWS)],
        "start": "2026-01-01T00:00:00",
        "end": "2026-01-01T00:01:00",
    }
    doc.update(changes)
    return doc


def answer(doc: Any, large: bool) -> Answer | UpstreamError:
    """A large body as the transport leaves it, or a small one as ``MetricsEndpoint`` gives
    it (decoded and checked by the transport)."""
    if not large:
        reply = Reply(200, b"", copy.deepcopy(doc), "application/json")
        try:
            Transport.checked("traffic", reply)
        except UpstreamError as exc:
            return exc
        return Answer(reply)
    raw = json.dumps(doc).encode()
    reply = Reply(200, raw, None, "application/json", decoded=False)
    return Answer(reply, None, Transport())  # type: ignore[arg-type]


def outcome(doc: Any, half: str, large: bool) -> tuple[Any, ...]:
    """What a read of ``doc`` gave, in comparable terms: the rows (their arrays as bytes, NaN
    included), the error, the fields counted as dropped; or the error raised."""
    metrics = Metrics()
    try:
        got, error = reader(metrics).halves(ACCOUNT, [answer(doc, large)], [(half, W)], [half])
    except UpstreamError as exc:
        return ("raised", exc.kind, exc.message, exc.status)
    rows: dict[str, Any] = {}
    if "totals" in got:
        rows[""] = (got["totals"].counts.tobytes(), got["totals"].gauges.tobytes())
    for rid, r in got.get("resources", {}).items():
        rows[rid] = (r.id, r.name, r.cname, r.row.counts.tobytes(), r.row.gauges.tobytes())
    said = None if error is None else (error.kind, error.message, error.status, error.body)
    return rows, said, metrics.values_rejected.fields


def with_rows(doc: dict[str, Any], **rows: Any) -> dict[str, Any]:
    """``doc`` with ``data[i]`` replaced (``d1234={...}``); a dict value updates the row."""
    for name, value in rows.items():
        i = int(name[1:])
        if isinstance(value, dict):
            doc["data"][i] = {**doc["data"][i], **value}
        else:
            doc["data"][i] = value
    return doc


CASES = {
    "clean": body(),
    "no-window-echo": body(start=None, end=None),
    "window-after-the-rows": {k: v for k, v in reversed(list(body().items()))},
    "bad-count-in-the-middle": with_rows(
        body(), d1234={"edge_status_2xx": -5}, d1500={"edge_requests_total": "x"}
    ),
    "count-beyond-2**53": with_rows(body(), d1999={"edge_requests_total": 2**60}),
    "bad-count-then-no-object": with_rows(body(), d100={"edge_status_2xx": -1}, d1500=7),
    "bad-count-then-no-id": with_rows(body(), d100={"edge_status_2xx": -1}, d1600={"resource": ""}),
    "error-body": body(status="error", message="boom"),
    "error-key": body(error="Too many resources"),
    "data-not-a-list": body(data={"r1": row(1)}),
    "other-account": body(account="other"),
}


@pytest.mark.parametrize("half", ["resources", "totals"])
@pytest.mark.parametrize("doc", CASES.values(), ids=CASES.keys())
def test_a_large_body_reads_as_the_transport_decoded_body_reads(doc: Any, half: str) -> None:
    assert outcome(doc, half, large=True) == outcome(doc, half, large=False)


def test_the_cases_say_what_they_are_meant_to() -> None:
    rows, error, rejected = outcome(CASES["clean"], "resources", large=True)
    assert error is None
    assert len(rows) == ROWS - ROWS // 97 - (ROWS % 97 > 1)
    assert rejected.count("edge_hit_ratio") == 8
    assert rejected.count("origin_request_time_1m_2m") == 5
    assert outcome(CASES["bad-count-in-the-middle"], "resources", large=True) == (
        "raised",
        "invalid_body",
        "data[1234].edge_status_2xx: expected a count from 0 to 9007199254740992, got -5",
        200,
    )
    _, error, _ = outcome(CASES["bad-count-then-no-object"], "resources", large=True)
    assert error[:2] == ("invalid_body", "data[1500]: expected an object, got int")
    _, error, _ = outcome(CASES["error-body"], "resources", large=True)
    assert error[:3] == ("error_body", "boom", 200)
    assert error[3]["data"][0] == row(0)  # the body as received


def test_no_row_object_is_alive_beyond_its_own_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the last row's values are parsed, the decoded objects of the rows before it are
    gone: a large reply's rows are never all alive at once."""
    alive: list[int] = []
    parse_row = parse.parse_row

    def counting(values: Any, where: str = "data[0]", *args: Any) -> parse.Row:
        if where == f"data[{ROWS - 1}]":
            alive.append(sum(1 for o in gc.get_objects() if type(o) is dict and MARK in o))
        return parse_row(values, where, *args)

    monkeypatch.setattr(parse, "parse_row", counting)
    doc = body()
    raw = json.dumps(doc).encode()
    del doc
    metrics = Metrics()
    before = sum(1 for o in gc.get_objects() if type(o) is dict and MARK in o)  # CASES'
    reply = Reply(200, raw, None, "application/json", decoded=False)
    got, error = reader(metrics).halves(
        ACCOUNT,
        [Answer(reply, None, Transport())],
        [("resources", W)],
        ["resources"],  # type: ignore[arg-type]
    )
    assert error is None
    assert len(got["resources"]) > ROWS * 0.9
    assert len(alive) == 1
    assert alive[0] - before <= 2
