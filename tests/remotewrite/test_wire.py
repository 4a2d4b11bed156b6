"""The request body: remote-write 1.0's WriteRequest (field numbers of prompb), snappy block
format, labels sorted, the same bytes for the same samples."""

from __future__ import annotations

import struct

import cramjam

from exporter.remotewrite.wire import Series, count, decode, encode, halves


def test_body_is_a_snappy_block_of_the_prompb_write_request() -> None:
    body = encode([Series((("b", "2"), ("__name__", "x")), 1.0, 2)])
    raw = bytes(cramjam.snappy.decompress_raw(body))
    # WriteRequest.timeseries = 1 { labels = 1 {name = 1, value = 2}, samples = 2 {value = 1
    # (double), timestamp = 2 (varint)} }, labels sorted by name (__name__ first).
    label1 = b"\x0a" + bytes([len(b"\x0a\x08__name__\x12\x01x")]) + b"\x0a\x08__name__\x12\x01x"
    label2 = b"\x0a\x06\x0a\x01b\x12\x012"
    sample = b"\x12\x0b\x09" + struct.pack("<d", 1.0) + b"\x10\x02"
    series = label1 + label2 + sample
    assert raw == b"\x0a" + bytes([len(series)]) + series


def test_same_samples_give_the_same_bytes_and_decode_back() -> None:
    samples = [
        Series((("__name__", "m"), ("account", "a"), ("side", s)), v, 60_000)
        for s, v in (("edge", 3.5), ("origin", 1.0))
    ]
    assert encode(samples) == encode(list(samples))
    back = decode(encode(samples))
    assert back == samples
    assert count(encode(samples)) == 2
    first, second = halves(back)
    assert (first, second) == ([samples[0]], [samples[1]])
