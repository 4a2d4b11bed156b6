"""The checker's remote-write reader against bytes written from the protocol's text, and
against the exporter's encoder (each would catch the other's mistake)."""

from __future__ import annotations

import struct

import cramjam
import pytest

from exporter.remotewrite.wire import Series, encode
from tests.simulation.promwire import Sample, WireError, decode


def _len(field: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([field << 3 | 2, len(payload)]) + payload


def _one(number: int = 1) -> bytes:
    """WriteRequest{timeseries{labels{__name__: "x"}, labels{a: "b"}, samples{1.5, 1000}}},
    its ``timeseries`` under field ``number``, by hand."""
    labels = _len(1, _len(1, b"__name__") + _len(2, b"x")) + _len(1, _len(1, b"a") + _len(2, b"b"))
    sample = b"\x09" + struct.pack("<d", 1.5) + b"\x10\xe8\x07"  # 1000 as a varint
    return _len(number, labels + _len(2, sample))


def test_a_body_written_from_the_protocol_is_read() -> None:
    body = bytes(cramjam.snappy.compress_raw(_one()))
    assert decode(body) == [Sample((("__name__", "x"), ("a", "b")), 1.5, 1000)]


def test_the_exporters_encoding_reads_back_as_sent() -> None:
    sent = [
        Series((("__name__", "cdnvideo_minute_requests"), ("account", "acc1")), 42.0, 60_000),
        Series((("__name__", "cdnvideo_minute_requests"), ("account", "acc2")), 0.5, -1),
    ]
    assert decode(encode(sent)) == [Sample(s.labels, s.value, s.timestamp_ms) for s in sent]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (_one(), "not a snappy block"),  # not compressed
        (bytes(cramjam.snappy.compress_raw(_one(number=2))), "WriteRequest field 2"),
        (bytes(cramjam.snappy.compress_raw(b"\x0a\x05\x0a")), "runs past the end"),
        (bytes(cramjam.snappy.compress_raw(b"\x0b")), "wire type 3"),
    ],
    ids=["uncompressed", "field-number", "cut-short", "group"],
)
def test_a_body_that_is_not_a_write_request_fails(body: bytes, problem: str) -> None:
    with pytest.raises(WireError, match=problem):
        decode(body)
