"""Reply rows -> fixed-order arrays of counted values and gauge values (flat or nested keys)."""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias

from exporter.support.platform_fields import SIDES, SIZE_RANGES, STATUS_CODES
from exporter.traffic.echo import echo_seconds
from exporter.traffic.reply import MetricsReply, MetricsRow, resource_identity
from exporter.upstream.errors import UpstreamError

# Counted per window (summed into counters): requests, statuses, hit bytes, as the reply
# carries them; then the bytes delivered, derived from the window's bandwidth (``transferred``).
READ_COUNT_KEYS: tuple[str, ...] = (
    *(f"{side}_requests_total" for side in SIDES),
    *(f"{side}_status_{code}" for side in SIDES for code in STATUS_CODES),
    "edge_hit_bytes",
)
TRANSFERRED: dict[str, str] = {side: f"{side}_transferred_bytes" for side in SIDES}
COUNT_KEYS: tuple[str, ...] = (*READ_COUNT_KEYS, *TRANSFERRED.values())
# Describing a window (gauges only): bandwidth (bits/s), hit ratio, request-time medians.
GAUGE_KEYS: tuple[str, ...] = (
    *(f"{side}_bandwidth" for side in SIDES),
    "edge_hit_ratio",
    *(f"{side}_request_time_{rng}" for side in SIDES for rng in SIZE_RANGES),
)
COUNT_INDEX = {key: i for i, key in enumerate(COUNT_KEYS)}
GAUGE_INDEX = {key: i for i, key in enumerate(GAUGE_KEYS)}
_READ_INDEX = {key: COUNT_INDEX[key] for key in READ_COUNT_KEYS}  # a reply key never sets bytes
# (bytes delivered, bandwidth) index pairs, per side
_BYTES_FROM = tuple((COUNT_INDEX[k], GAUGE_INDEX[f"{s}_bandwidth"]) for s, k in TRANSFERRED.items())
_NESTED = {f"{side}_request_time": side for side in SIDES}
_RANGE = {rng.lower(): rng for rng in SIZE_RANGES}
NAN = math.nan
# Counts are whole numbers: above 2**53 a float cannot add one, and a few such values summed
# overflow to +Inf, which no counter (and no state file) can hold. Larger is a broken reply.
MAX_COUNT = float(2**53)
_FLOAT_MAX = sys.float_info.max

Values: TypeAlias = "array[float]"  # array("d"); NaN marks a key the reply did not carry


def blank(size: int = len(COUNT_KEYS)) -> Values:
    return array("d", [NAN]) * size


# parse_row: each key's slot in one look-up (a count's index, or ~ a gauge's index), and the
# blank arrays it copies
_SLOT = {**_READ_INDEX, **{key: ~i for key, i in GAUGE_INDEX.items()}}
_NO_COUNTS, _NO_GAUGES = blank(len(COUNT_KEYS)), blank(len(GAUGE_KEYS))


@dataclass(frozen=True, slots=True)
class Row:
    """One reply row: counted values in COUNT_KEYS order, gauge values in GAUGE_KEYS order."""

    counts: Values
    gauges: Values


@dataclass(frozen=True, slots=True)
class ResourceRow:
    """A per-resource row with the resource's identity."""

    id: str
    name: str
    cname: str
    row: Row


def _bad(where: str, key: str, value: Any, what: str = "a finite number") -> UpstreamError:
    return UpstreamError(
        "traffic", "invalid_body", f"{where}.{key}: expected {what}, got {value!r:.40}", 200
    )


def _as_float(value: Any) -> float | None:
    """A finite number from a JSON number or a numeric string (``"0.09091"``); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    elif isinstance(value, int | float):
        try:
            number = float(value)  # an int beyond the float range overflows
        except OverflowError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _number(value: Any, where: str, key: str) -> float:
    number = _as_float(value)
    if number is None:
        raise _bad(where, key, value)
    return number


Rejected = list[str]  # gauge keys whose value was dropped (GAUGE_KEYS names, or a family)


def parse_row(
    values: Mapping[str, Any],
    where: str = "data[0]",
    rejected: Rejected | None = None,
    seconds: int | None = None,
) -> Row:
    """Known keys into arrays; unknown keys are ignored, ``null`` and ``""`` mean absent.

    Numbers may come as numeric strings. An unreadable count (not a number, negative, above
    2**53) raises UpstreamError: the window fails as a whole. An unreadable gauge value
    (bandwidth, hit ratio, a median) is dropped alone and its key appended to ``rejected``.
    ``seconds``: the window's length, from which the bytes delivered are derived
    (``transferred_bytes``); None leaves them absent.
    """
    counts = _NO_COUNTS[:]
    gauges = _NO_GAUGES[:]
    for key, value in values.items():
        slot = _SLOT.get(key)
        if slot is not None:  # the common case first: a number as it is, in its range
            kind = type(value)
            if kind is int or kind is float:
                if slot >= 0:
                    if 0 <= value <= MAX_COUNT:
                        counts[slot] = value
                        continue
                elif -_FLOAT_MAX <= value <= _FLOAT_MAX:
                    gauges[~slot] = value
                    continue
        if value is None or value == "":
            continue
        _read_value(key, value, counts, gauges, where, rejected)
    if seconds is not None:
        transferred_bytes(counts, gauges, seconds)
    return Row(counts, gauges)


def _read_value(
    key: str,
    value: Any,
    counts: Values,
    gauges: Values,
    where: str,
    rejected: Rejected | None,
) -> None:
    """One value past the common case (a number of a known key, in its range): a numeric
    string, an unreadable value, a request-time key spelled otherwise, the medians by size
    range (``parse_row``)."""
    i = _READ_INDEX.get(key)
    if i is not None:
        kind = type(value)
        if (kind is int or kind is float) and 0 <= value <= MAX_COUNT:  # the common case
            counts[i] = value
            return
        number = _number(value, where, key)
        if not 0 <= number <= MAX_COUNT:
            raise _bad(where, key, value, f"a count from 0 to {MAX_COUNT:.0f}")
        counts[i] = number
        return
    i = GAUGE_INDEX.get(key)
    if i is None and key.startswith(("edge_request_time_", "origin_request_time_")):
        prefix, _, rng = key.partition("_request_time_")
        i = GAUGE_INDEX.get(f"{prefix}_request_time_{_RANGE.get(rng.lower(), rng)}")
    if i is not None:
        kind = type(value)
        if (kind is int or kind is float) and -_FLOAT_MAX <= value <= _FLOAT_MAX:
            gauges[i] = value
            return
        gauge = _as_float(value)
        if gauge is None:
            _reject(rejected, GAUGE_KEYS[i])
        else:
            gauges[i] = gauge
        return
    side = _NESTED.get(key)
    if side is None:
        return  # a metric we do not export
    if isinstance(value, Mapping):
        for rng, median in value.items():
            canonical = _RANGE.get(str(rng).lower())
            if canonical is None or median is None or median == "":
                continue
            name = f"{side}_request_time_{canonical}"
            gauge = _as_float(median)
            if gauge is None:
                _reject(rejected, name)
            else:
                gauges[GAUGE_INDEX[name]] = gauge
    elif _as_float(value) is None:
        _reject(rejected, key)  # neither medians by size range nor one bare number
    # A bare number is a median without a size range: there is no series for it.


_NO_VALUES: Mapping[str, Any] = MappingProxyType({})


def row_reader(per_resource: bool) -> Callable[[int, Any], Any]:
    """What each element of a reply's ``data`` becomes as it is decoded
    (``jsonpieces.loads_each``): a ``MetricsRow`` holding its values parsed, so the element's
    dict is dropped at once. An element that is no object, or a per-resource
    row without a resource id, is left as it is: ``parse_metrics`` raises its error, before
    any error of the values. Keeps no state (a decode may start over)."""

    def read(i: int, item: Any) -> Any:
        if type(item) is not dict:
            return item
        ident = ("", "", "")
        if per_resource:
            found = resource_identity(item)
            if found is None:
                return item
            ident = found
        rejected: Rejected = []
        try:
            row = parse_row(item, f"data[{i}]", rejected)
        except UpstreamError as error:
            return MetricsRow(_NO_VALUES, *ident, error=error)
        return MetricsRow(_NO_VALUES, *ident, row, tuple(rejected))

    return read


def _row(r: MetricsRow, i: int, rejected: Rejected | None, seconds: int | None) -> Row:
    """``parse_row`` of a reply's row ``i``, or what it gave as the reply was decoded."""
    if r.error is not None:
        raise r.error
    row = r.parsed
    if row is None:
        return parse_row(r.values, f"data[{i}]", rejected, seconds)
    if rejected is not None:
        rejected.extend(r.rejected)
    if seconds is not None:  # the same bytes at each call: a row is parsed once, or alike
        transferred_bytes(row.counts, row.gauges, seconds)
    return row


def transferred_bytes(counts: Values, gauges: Values, seconds: int) -> None:
    """The bytes delivered over a window of ``seconds``: its bandwidth (bits/s, the mean over
    the window) x seconds / 8, to the nearest byte. Absent with the bandwidth, or when the
    bandwidth is negative or the bytes beyond MAX_COUNT (no counter can hold them)."""
    for i, bw in _BYTES_FROM:
        b = gauges[bw]
        if b == b and b >= 0:
            delivered = float(round(b * seconds / 8))
            if delivered <= MAX_COUNT:
                counts[i] = delivered


def window_seconds(reply: MetricsReply) -> int | None:
    """The length of the window a reply says it covers (``start``, ``end``); None when it
    does not say, or says it in a form we cannot read."""
    start, end = echo_seconds(reply.start), echo_seconds(reply.end)
    if start is None or end is None or end <= start:
        return None
    return end - start


def _reject(rejected: Rejected | None, key: str) -> None:
    if rejected is not None:
        rejected.append(key)


def add_into(dst: Values, src: Values) -> None:
    """dst += src, key by key; NaN in src adds nothing, NaN in dst counts as 0."""
    for i, v in enumerate(src):
        if v == v:
            d = dst[i]
            dst[i] = v if d != d else d + v


def merge(rows: Iterable[Row]) -> Row:
    """Counts summed; gauges of the last row that carried them (duplicate rows are rare)."""
    counts = blank(len(COUNT_KEYS))
    gauges = blank(len(GAUGE_KEYS))
    for row in rows:
        add_into(counts, row.counts)
        for i, g in enumerate(row.gauges):
            if g == g:
                gauges[i] = g
    return Row(counts, gauges)


def parse_totals(reply: MetricsReply, rejected: Rejected | None = None) -> Row:
    """The account-totals reply: normally one row; several are merged. No row at all fails
    the window (it is no answer, not zero traffic)."""
    if not reply.rows:
        raise UpstreamError("traffic", "invalid_body", "totals reply: empty data list", 200)
    seconds = window_seconds(reply)
    return merge(_row(r, i, rejected, seconds) for i, r in enumerate(reply.rows))


def parse_resources(
    reply: MetricsReply, rejected: Rejected | None = None
) -> dict[str, ResourceRow]:
    """The per-resource reply keyed by resource id (duplicate ids merged)."""
    out: dict[str, ResourceRow] = {}
    seconds = window_seconds(reply)
    for i, r in enumerate(reply.rows):
        row = _row(r, i, rejected, seconds)
        seen = out.get(r.resource)
        if seen is not None:
            row = merge((seen.row, row))
        out[r.resource] = ResourceRow(r.resource, r.resource_name, r.cname, row)
    return out
