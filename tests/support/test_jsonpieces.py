"""jsonpieces gives exactly the standard library's results, on generated documents too."""

from __future__ import annotations

import gc
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.support import jsonpieces

STDLIB = {"separators": (",", ":"), "allow_nan": False}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=80) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=200,
)


def stdlib_loads(raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc)


def pieces_loads(raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", jsonpieces.loads(raw)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc)


def tagged(i: int, item: Any) -> tuple[int, Any]:
    return (i, item)


def each_reference(raw: bytes) -> tuple[str, Any]:
    """What ``loads_each(raw, "data", tagged)`` is defined to be."""
    got = stdlib_loads(raw)
    value = got[1]
    if got[0] == "ok" and type(value) is dict and type(value.get("data")) is list:
        value["data"] = [tagged(i, e) for i, e in enumerate(value["data"])]
    return got


def pieces_each(raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", jsonpieces.loads_each(raw, "data", tagged)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_dumps_is_json_dumps(doc: Any) -> None:
    assert jsonpieces.dumps(doc) == json.dumps(doc, **STDLIB)


@settings(max_examples=150, deadline=None)
@given(documents, st.sampled_from([None, 0, 2]))
def test_loads_is_json_loads(doc: Any, indent: int | None) -> None:
    raw = json.dumps(doc, indent=indent).encode()
    assert jsonpieces.loads(raw) == json.loads(raw)


@settings(max_examples=150, deadline=None)
@given(documents, st.data())
def test_broken_text_fails_or_decodes_as_json_loads_does(doc: Any, data: st.DataObject) -> None:
    raw = json.dumps({"data": doc}, indent=1).encode()
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    junk = data.draw(st.sampled_from([b"", b",", b"]", b"}", b" x", b'"', b"\xff", b"{}"]))
    broken = raw[:cut] + junk + raw[cut:]
    assert pieces_loads(broken) == stdlib_loads(broken)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN, "b": [Infinity, -Infinity]}',
        b"\xef\xbb\xbf" + b'{"bom": 1}',
        '{"utf16": [1, 2]}'.encode("utf-16"),
        b'{"dup": 1, "dup": 2}',
        b"[" * 5000 + b"]" * 5000,
        b"   [1, 2]   \n",
        b"",
        b"[1, 2] [3]",
        b'{"data": [1, 2], "data": [3]}',
        b"\xef\xbb\xbf" + b'{"data": [1]}',
        '{"data": [1, {"a": 2}]}'.encode("utf-16"),
        b'{"data": {"a": [1]}}',
        b'{"data": [NaN, [Infinity]]}',
        b'[{"data": [1]}]',
        b'{"data": []}',
        b'{"data": [1] } [2]',
    ],
    ids=[
        *("nan", "bom", "utf16", "duplicate-keys", "deep", "spaces", "empty", "extra-data"),
        *("data-twice", "data-bom", "data-utf16", "data-not-a-list", "data-nan"),
        *("data-not-in-an-object", "data-empty", "data-extra"),
    ],
)
def test_edge_cases_match_json_loads(raw: bytes) -> None:
    """``loads`` and ``loads_each`` (its definition: ``each`` over json's list)."""
    got, want = pieces_loads(raw), stdlib_loads(raw)
    assert json.dumps(got, default=str) == json.dumps(want, default=str)
    got, want = pieces_each(raw), each_reference(raw)
    assert json.dumps(got, default=str) == json.dumps(want, default=str)


def test_dumps_refuses_nan_as_json_dumps_does() -> None:
    doc = {"series": {f"r{i}": [1.0, 2.0] for i in range(100)}}
    doc["series"]["r7"] = [math.nan]
    with pytest.raises(ValueError, match="Out of range float values"):
        json.dumps(doc, **STDLIB)
    with pytest.raises(ValueError, match="Out of range float values"):
        jsonpieces.dumps(doc)


def test_a_reply_of_a_thousand_rows_decodes_and_encodes_the_same() -> None:
    rows = [
        {"resource": str(100000 + i), "cname": f"c{i}.example", "edge_requests_total": i * 7}
        for i in range(1000)
    ]
    doc = {"start": "2026-01-01T00:00:00", "data": rows, "metrics": ["edge_requests_total"]}
    raw = json.dumps(doc).encode()
    assert jsonpieces.loads(raw) == doc
    assert jsonpieces.dumps(doc) == json.dumps(doc, **STDLIB)


def test_the_rows_of_a_reply_share_their_keys() -> None:
    """Each row is decoded on its own, and json shares equal keys within one call only: the
    5,000 rows of a per-resource reply held 22 MB of copies of the same ~66 keys."""
    rows = [{"resource": str(i), "edge_requests_total": i} for i in range(3)]
    raw = json.dumps({"data": rows}).encode()
    decoded = jsonpieces.loads(raw)["data"]
    assert decoded == rows
    keys = [list(row) for row in decoded]
    assert all(k is keys[0][0] for k, _ in keys)
    assert all(k is keys[0][1] for _, k in keys)
    separate = [list(json.loads(json.dumps(row))) for row in rows]
    assert separate[0][0] is not separate[1][0]  # what decoding a row on its own gives


def test_encoded_values_go_in_as_they_are() -> None:
    plain = {"a": [1, 2.5, None], "b": {"c": "x\u00e9", "d": [[1], [2]] * 40}}
    ahead = {"a": jsonpieces.encoded([1, 2.5, None]), "b": {"c": "x\u00e9", "d": []}}
    ahead["b"]["d"] = [jsonpieces.encoded([1]), jsonpieces.encoded([2])] * 40
    assert jsonpieces.dumps(ahead) == jsonpieces.dumps(plain) == json.dumps(plain, **STDLIB)


@settings(max_examples=150, deadline=None)
@given(documents, st.sampled_from([None, 0, 2]))
def test_loads_each_is_json_loads_with_the_list_mapped(doc: Any, indent: int | None) -> None:
    for top in (doc, {"data": doc, "start": doc}, {"data": [doc, doc], "x": 1}):
        raw = json.dumps(top, indent=indent).encode()
        assert pieces_each(raw) == each_reference(raw)


@settings(max_examples=150, deadline=None)
@given(st.lists(documents, max_size=20), st.data())
def test_loads_each_of_broken_text_fails_or_decodes_as_json_loads_does(
    rows: list[Any], data: st.DataObject
) -> None:
    raw = json.dumps({"data": rows, "end": 1}, indent=1).encode()
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    junk = data.draw(st.sampled_from([b"", b",", b"]", b"}", b" x", b'"', b"\xff", b"{}"]))
    broken = raw[:cut] + junk + raw[cut:]
    assert pieces_each(broken) == each_reference(broken)


def test_loads_each_drops_each_element_before_decoding_the_next() -> None:
    """At most the element in hand and the one before it (being released) are alive."""
    key = "loads_each_test_row"
    raw = json.dumps({"data": [{key: i, "nested": {"x": [i]}} for i in range(300)]}).encode()
    alive: list[int] = []

    def each(i: int, item: Any) -> int:
        alive.append(sum(1 for o in gc.get_objects() if type(o) is dict and key in o))
        return i

    assert jsonpieces.loads_each(raw, "data", each) == {"data": list(range(300))}
    assert max(alive) <= 2
