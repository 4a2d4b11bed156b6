"""The remote-write 1.0 request: ``prometheus.WriteRequest`` built with the protobuf runtime
from its schema (prompb/remote.proto, types.proto), snappy block-compressed with cramjam.

No generated ``_pb2`` module and no hand-written bytes: the schema below is the 1.0 subset a
receiver reads (labels, samples), declared as a ``FileDescriptorProto`` and turned into message
classes by protobuf's own ``message_factory``. Field numbers are the upstream ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import cramjam
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CONTENT_TYPE = "application/x-protobuf"
ENCODING = "snappy"
VERSION = "0.1.0"  # X-Prometheus-Remote-Write-Version of the 1.0 protocol

_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(
        name="cdnvideo_exporter/prompb_remote.proto", package="prometheus", syntax="proto3"
    )

    def message(name: str, *fields: tuple[str, int, int, int, str]) -> None:
        m = f.message_type.add(name=name)
        for fname, number, typ, label, type_name in fields:
            fd = m.field.add(name=fname, number=number, type=typ, label=label)
            if type_name:
                fd.type_name = type_name

    one, many = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    message("Label", ("name", 1, _F.TYPE_STRING, one, ""), ("value", 2, _F.TYPE_STRING, one, ""))
    message(
        "Sample", ("value", 1, _F.TYPE_DOUBLE, one, ""), ("timestamp", 2, _F.TYPE_INT64, one, "")
    )
    message(
        "TimeSeries",
        ("labels", 1, _F.TYPE_MESSAGE, many, ".prometheus.Label"),
        ("samples", 2, _F.TYPE_MESSAGE, many, ".prometheus.Sample"),
    )
    message("WriteRequest", ("timeseries", 1, _F.TYPE_MESSAGE, many, ".prometheus.TimeSeries"))
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
WriteRequest: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("prometheus.WriteRequest")
)


@dataclass(frozen=True, slots=True)
class Series:
    """One sample of one series: labels (``__name__`` among them), value, time in ms."""

    labels: tuple[tuple[str, str], ...]
    value: float
    timestamp_ms: int


# Series serialised by one call: a serialisation is one C call holding the GIL, so a large
# request is made as WriteRequests of CHUNK series each, their bytes joined. Protobuf reads
# concatenated messages as one whose repeated fields are appended, so the joined bytes are
# the bytes of the whole request serialised at once.
CHUNK = 2_000


def request(series: Iterable[Series]) -> Any:
    """The WriteRequest message of ``series``, labels sorted by name (as the protocol
    requires)."""
    req = WriteRequest()
    for s in series:
        ts = req.timeseries.add()
        for name, value in sorted(s.labels):
            ts.labels.add(name=name, value=value)
        ts.samples.add(value=s.value, timestamp=s.timestamp_ms)
    return req


def encode(series: Iterable[Series]) -> bytes:
    """The snappy-compressed WriteRequest of ``series`` (``request``), serialised ``CHUNK``
    series at a time. The same series give the same bytes, so a retry resends an identical
    request."""
    rest = iter(series)
    parts: list[bytes] = []
    while chunk := list(islice(rest, CHUNK)):
        parts.append(request(chunk).SerializeToString(deterministic=True))
    return bytes(cramjam.snappy.compress_raw(b"".join(parts)))


def decode(body: bytes) -> list[Series]:
    """The series of a compressed WriteRequest (the 400 split, tests)."""
    req = WriteRequest()
    req.ParseFromString(bytes(cramjam.snappy.decompress_raw(body)))
    out: list[Series] = []
    for ts in req.timeseries:
        labels = tuple((lb.name, lb.value) for lb in ts.labels)
        for sample in ts.samples:
            out.append(Series(labels, sample.value, sample.timestamp))
    return out


def count(body: bytes) -> int:
    """How many series a compressed WriteRequest holds (one sample each), without building
    them in Python: what the self-metrics count."""
    req = WriteRequest()
    req.ParseFromString(bytes(cramjam.snappy.decompress_raw(body)))
    return len(req.timeseries)


def halves(series: Sequence[Series]) -> tuple[list[Series], list[Series]]:
    mid = len(series) // 2
    return list(series[:mid]), list(series[mid:])
