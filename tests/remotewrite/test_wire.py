"""The request body: remote-write 1.0's WriteRequest (field numbers of prompb), snappy block
format, labels sorted, the same bytes for the same samples."""

from __future__ import annotations

import struct

import cramjam

from exporter.remotewrite.wire import CHUNK, Series, WriteRequest, count, decode, encode, halves


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


def test_a_request_made_in_chunks_is_the_request_serialised_at_once() -> None:
    """Past ``CHUNK`` series the request is serialised a chunk at a time; the bytes are those
    of the one WriteRequest holding every series, in order."""
    samples = [
        Series((("__name__", "m"), ("resource", str(i)), ("side", "edge")), float(i), 60_000)
        for i in range(2 * CHUNK + 7)
    ]
    whole = WriteRequest()
    for s in samples:
        ts = whole.timeseries.add()
        for name, value in s.labels:
            ts.labels.add(name=name, value=value)
        ts.samples.add(value=s.value, timestamp=s.timestamp_ms)
    raw = whole.SerializeToString(deterministic=True)
    assert bytes(cramjam.snappy.decompress_raw(encode(samples))) == raw
    assert decode(encode(samples)) == samples
    assert count(encode(samples[:CHUNK])) == CHUNK
