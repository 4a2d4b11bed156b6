"""The checker's own reading of a remote-write 1.0 body, from the protocol's text alone.

Prometheus' remote-write 1.0 specification: the body is a ``prometheus.WriteRequest``
(prompb/remote.proto, types.proto) in protobuf's wire format, snappy-compressed in the block
format (no framing). The field numbers stated here are upstream's:

- ``WriteRequest``: ``timeseries`` = 1 (repeated ``TimeSeries``);
- ``TimeSeries``: ``labels`` = 1 (repeated ``Label``), ``samples`` = 2 (repeated ``Sample``);
- ``Label``: ``name`` = 1, ``value`` = 2 (strings);
- ``Sample``: ``value`` = 1 (double), ``timestamp`` = 2 (int64, milliseconds).

Nothing here comes from the exporter: a body it encodes with a wrong field number, wire type
or framing fails here (``WireError``). Snappy's block format is decompressed by ``cramjam``,
which the exporter uses only to compress.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

import cramjam

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """A body that is not a remote-write 1.0 ``WriteRequest``."""


@dataclass(frozen=True, slots=True)
class Sample:
    labels: tuple[tuple[str, str], ...]  # as sent (the protocol wants them sorted by name)
    value: float
    timestamp_ms: int


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(data) or shift > 63:
            raise WireError("a varint runs past the end of its message")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a message: an int for varint and fixed fields (a
    fixed64 as its 8 bytes' unsigned integer), bytes for a length-delimited one."""
    out: list[tuple[int, int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = _varint(data, i)
            out.append((number, wire, value))
        elif wire == FIXED64:
            if i + 8 > len(data):
                raise WireError("a 64-bit field runs past the end of its message")
            out.append((number, wire, int.from_bytes(data[i : i + 8], "little")))
            i += 8
        elif wire == LENGTH:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise WireError("a length-delimited field runs past the end of its message")
            out.append((number, wire, data[i : i + size]))
            i += size
        elif wire == FIXED32:
            if i + 4 > len(data):
                raise WireError("a 32-bit field runs past the end of its message")
            out.append((number, wire, int.from_bytes(data[i : i + 4], "little")))
            i += 4
        else:
            raise WireError(f"wire type {wire} of field {number} is not protobuf's")
    return out


def _message(value: int | bytes, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise WireError(f"{what} is not length-delimited")
    return value


@functools.lru_cache(maxsize=65536)  # a series' labels recur in every body
def _label(data: bytes) -> tuple[str, str]:
    name = value = ""
    for number, _, v in _fields(data):
        if number == 1:
            name = _message(v, "Label.name").decode()
        elif number == 2:
            value = _message(v, "Label.value").decode()
    return name, value


def _sample(data: bytes) -> tuple[float, int]:
    value, ts = 0.0, 0
    for number, wire, v in _fields(data):
        if number == 1:
            if wire != FIXED64 or not isinstance(v, int):
                raise WireError("Sample.value is not a double")
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif number == 2:
            if wire != VARINT or not isinstance(v, int):
                raise WireError("Sample.timestamp is not an int64")
            ts = v - (1 << 64) if v >= 1 << 63 else v
    return value, ts


def decode(body: bytes) -> list[Sample]:
    """Every sample of a snappy-compressed ``WriteRequest``, with its series' labels."""
    try:
        raw = bytes(cramjam.snappy.decompress_raw(body))
    except Exception as exc:  # cramjam raises its own error types
        raise WireError(f"not a snappy block: {exc}") from exc
    out: list[Sample] = []
    for number, _, series in _fields(raw):
        if number != 1:
            raise WireError(f"WriteRequest field {number}: only timeseries (1) is sent")
        labels: list[tuple[str, str]] = []
        samples: list[tuple[float, int]] = []
        for n, _, v in _fields(_message(series, "WriteRequest.timeseries")):
            if n == 1:
                labels.append(_label(_message(v, "TimeSeries.labels")))
            elif n == 2:
                samples.append(_sample(_message(v, "TimeSeries.samples")))
        out.extend(Sample(tuple(labels), value, ts) for value, ts in samples)
    return out
