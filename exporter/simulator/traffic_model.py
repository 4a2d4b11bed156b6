"""Final per-minute traffic figures per resource: daily curve, noise, error bursts; cached."""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from exporter.simulator.dataset import CdnResource
from exporter.simulator.hashing import Stream, key_hash, mix, unit
from exporter.support.platform_fields import SIZE_RANGES, STATUS_CODES

# Row layout: one array('d') per resource and minute.
EDGE_BW, ORIGIN_BW, EDGE_REQ, ORIGIN_REQ, EDGE_HIT_BYTES = 0, 1, 2, 3, 4
EDGE_STATUS0 = 5
ORIGIN_STATUS0 = EDGE_STATUS0 + len(STATUS_CODES)
EDGE_RT0 = ORIGIN_STATUS0 + len(STATUS_CODES)
ORIGIN_RT0 = EDGE_RT0 + len(SIZE_RANGES)
EDGE_HIT_RATIO = ORIGIN_RT0 + len(SIZE_RANGES)
N_COLS = EDGE_HIT_RATIO + 1
COUNT_START, COUNT_END = EDGE_REQ, EDGE_RT0  # requests, hit bytes and statuses: summed counts
EDGE_2XX = EDGE_STATUS0 + STATUS_CODES.index("2xx")
ORIGIN_2XX = ORIGIN_STATUS0 + STATUS_CODES.index("2xx")
BYTES_PER_BPS_MINUTE = 60 / 8  # bytes in one minute at 1 bit/s

# Specific codes per class, and the share of each class left to codes the API does not name.
_CLASSES = (
    ("2xx", ("200", "204", "206")),
    ("3xx", ("301", "302", "304")),
    ("4xx", ("400", "401", "403", "404", "416", "429")),
    ("5xx", ("500", "501", "502", "503", "504", "505")),
)
_KIND_RPM = {"www": 3000, "static": 20000, "vod": 1500, "img": 15000,
             "dl": 300, "api": 5000, "hls": 30000, "cdn": 8000}  # fmt: skip
_KIND_BYTES = {"www": 40e3, "static": 60e3, "vod": 3.5e6, "img": 120e3,
               "dl": 25e6, "api": 4e3, "hls": 900e3, "cdn": 300e3}  # fmt: skip
_EDGE_RT = (0.015, 0.04, 0.07, 0.1, 0.18, 0.3, 0.42, 0.9)


@dataclass(frozen=True)
class Profile:
    """Per-resource constants drawn once from the seed."""

    key: int
    rpm: float
    bytes_per_request: float
    hit_base: float
    # shares of requests for each named code except 200, in _CLASSES order, plus "other" per class
    shares: tuple[float, ...]
    other_shares: tuple[float, float, float, float]
    rt_factor: float


def _profile(seed: int, account: str, res: CdnResource) -> Profile:
    rnd = Stream(key_hash(seed, "traffic", account, res.id))
    media = res.kind in ("vod", "dl", "hls")
    cacheable = res.kind in ("static", "img", "hls", "cdn")
    shares = (
        rnd.between(0.002, 0.01),  # 204
        rnd.between(0.1, 0.3) if media else rnd.between(0.002, 0.02),  # 206
        rnd.between(0.001, 0.004),  # 301
        rnd.between(0.002, 0.008),  # 302
        rnd.between(0.05, 0.1) if cacheable else rnd.between(0.01, 0.03),  # 304
        rnd.between(0.0005, 0.002),  # 400
        rnd.between(0.0002, 0.001),  # 401
        rnd.between(0.0005, 0.003),  # 403
        rnd.between(0.004, 0.015),  # 404
        rnd.between(0.001, 0.004) if media else rnd.between(0.0, 0.0005),  # 416
        rnd.between(0.0, 0.0005),  # 429
        rnd.between(0.0001, 0.0004),  # 500
        rnd.between(0.0, 0.00002),  # 501
        rnd.between(0.0001, 0.0004),  # 502
        rnd.between(0.00005, 0.0002),  # 503
        rnd.between(0.0001, 0.0003),  # 504
        rnd.between(0.0, 0.00001),  # 505
    )
    return Profile(
        key=key_hash(seed, "minute", account, res.id),
        rpm=_KIND_RPM[res.kind] * rnd.between(0.2, 2.0),
        bytes_per_request=_KIND_BYTES[res.kind] * rnd.between(0.6, 1.5),
        hit_base=rnd.between(0.4, 0.7) if res.kind == "api" else rnd.between(0.8, 0.98),
        shares=shares,
        other_shares=(0.001, 0.0005, 0.0005, 0.00002),
        rt_factor=rnd.between(0.7, 1.4),
    )


def daily_load(minute_start: int, phase_hours: float) -> float:
    """Load relative to the daily peak (0.3 at night, 1.0 in the evening)."""
    hours = (minute_start % 86400) / 3600.0
    return 0.3 + 0.7 * (0.5 + 0.5 * math.cos(2 * math.pi * (hours - 17.5 - phase_hours) / 24))


def _burst(key: int, minute_index: int, block: int, chance: float) -> float:
    """Intensity (share of 5xx) of an error burst covering this minute, 0 when none."""
    start_block = minute_index // block
    h = mix(key ^ (start_block * 0x1000193))
    if unit(h) >= chance:
        return 0.0
    rnd = Stream(h)
    offset = rnd.integer(0, block - 6)
    length = rnd.integer(2, 6)
    pos = minute_index - start_block * block
    return rnd.between(0.05, 0.35) if offset <= pos < offset + length else 0.0


def _split(total: int, specific_shares: Sequence[float], other: float) -> tuple[list[int], int]:
    """Counts for the named codes of a class and the class total (named codes + others)."""
    named = [int(total * s + 0.5) for s in specific_shares]
    others = int(total * other + 0.5)
    return named, sum(named) + others


def _statuses(requests: int, p: Profile, five_xx: float, origin: bool) -> list[int]:
    """The 22 status columns in STATUS_CODES order; class totals include the named codes."""
    s = p.shares
    if origin:  # the origin sees more revalidations and fewer client errors
        s = (*s[:4], s[4] * 1.6, *(x * 0.5 for x in s[5:11]), *s[11:])
    five = [x + five_xx * w for x, w in zip(s[11:17], (0.1, 0.0, 0.4, 0.2, 0.3, 0.0), strict=True)]
    n4, t4 = _split(requests, s[5:11], p.other_shares[2])
    n5, t5 = _split(requests, five, p.other_shares[3])
    n3, t3 = _split(requests, s[2:5], p.other_shares[1])
    n2_rest, others2 = _split(requests, s[0:2], p.other_shares[0])
    n200 = max(0, requests - t3 - t4 - t5 - others2)
    t2 = n200 + others2
    return [n200, *n2_rest, t2, *n3, t3, *n4, t4, *n5, t5]


def resource_minute(p: Profile, minute_start: int, phase: float, incident: float) -> array[float]:
    """Final figures of one resource for the minute starting at `minute_start`."""
    m = minute_start // 60
    rnd = Stream(mix(p.key ^ m))
    load = daily_load(minute_start, phase)
    noise = 1.0 + 0.24 * (rnd.next() + rnd.next() - 1.0)
    requests = int(p.rpm * load * noise)
    burst = min(0.6, _burst(p.key, m, 15, 0.03) + incident)
    edge_status = _statuses(requests, p, burst, origin=False)
    hit_ratio = min(0.999, max(0.0, p.hit_base + 0.03 * (rnd.next() - 0.5) - burst * 0.3))
    edge_bytes_est = requests * p.bytes_per_request * (0.95 + 0.1 * rnd.next())
    edge_bw = 2 * int(edge_bytes_est / BYTES_PER_BPS_MINUTE / 2)  # even, so bytes are whole
    edge_bytes = edge_bw * BYTES_PER_BPS_MINUTE
    hit_bytes = int(edge_bytes * hit_ratio + 0.5)
    origin_req = int(requests * (1.0 - hit_ratio) * 1.05 + 0.5)
    origin_status = _statuses(origin_req, p, burst * 0.8, origin=True)
    origin_bytes = edge_bytes - hit_bytes + origin_req * 600
    origin_bw = 2 * int(origin_bytes / BYTES_PER_BPS_MINUTE / 2)
    slow = p.rt_factor * (0.8 + 0.4 * load) * (0.9 + 0.2 * rnd.next()) * (1.0 + 3.0 * burst)
    edge_rt = [round(b * slow, 4) if edge_status[3] else 0.0 for b in _EDGE_RT]
    origin_rt = [round((b * 4 + 0.05) * slow, 4) if origin_status[3] else 0.0 for b in _EDGE_RT]
    ratio = round(hit_bytes / edge_bytes, 4) if edge_bytes else 0.0
    edge_req = edge_status[3] + edge_status[7] + edge_status[14] + edge_status[21]
    origin_req = origin_status[3] + origin_status[7] + origin_status[14] + origin_status[21]
    row = array("d", (edge_bw, origin_bw, edge_req, origin_req, hit_bytes))
    row.extend(edge_status)
    row.extend(origin_status)
    row.extend(edge_rt)
    row.extend(origin_rt)
    row.append(ratio)
    return row


class AccountTraffic:
    """Final per-minute rows of every resource of one account, cached by minute.

    A resource has traffic in the minutes of its life (``spans``: from the minute it was
    added, before the minute it was deleted; the whole time unless churned); in any other
    minute its row is all zeros and a per-resource reply leaves it out."""

    def __init__(
        self, seed: int, account: str, resources: tuple[CdnResource, ...], cache_minutes: int
    ) -> None:
        self.account = account
        self.resources = resources
        self.index = {r.id: i for i, r in enumerate(resources)}
        self.spans = [(-math.inf, math.inf) for _ in resources]
        self._seed = seed
        self._profiles = [_profile(seed, account, r) for r in resources]
        self._phase = Stream(key_hash(seed, "phase", account)).between(-2.0, 2.0)
        self._incident_key = key_hash(seed, "incident", account)
        self._cache: OrderedDict[int, list[array[float]]] = OrderedDict()
        self._cache_minutes = cache_minutes

    def rows(self, minute_start: int) -> list[array[float]]:
        """Final rows (one per resource, in `resources` order) for one minute."""
        cached = self._cache.get(minute_start)
        if cached is not None:
            self._cache.move_to_end(minute_start)
            return cached
        incident = _burst(self._incident_key, minute_start // 60, 60, 0.02)
        rows = [
            resource_minute(p, minute_start, self._phase, incident)
            if a <= minute_start < b
            else _ZERO
            for p, (a, b) in zip(self._profiles, self.spans, strict=True)
        ]
        self._cache[minute_start] = rows
        if len(self._cache) > self._cache_minutes:
            self._cache.popitem(last=False)
        return rows

    def alive(self, index: int, start: int, minutes: int = 1) -> bool:
        """Whether resource ``index`` had traffic in any minute of [start, start + minutes)."""
        a, b = self.spans[index]
        return a < start + 60 * minutes and start < b

    # -- churn: each change takes effect from the minute boundary ``at`` --------------------
    def add(self, resource: CdnResource, at: int) -> None:
        self.resources = (*self.resources, resource)
        self.index[resource.id] = len(self.resources) - 1
        self.spans.append((at, math.inf))
        self._profiles.append(_profile(self._seed, self.account, resource))
        self._cache.clear()

    def delete(self, resource_id: str, at: int) -> None:
        i = self.index[resource_id]
        self.spans[i] = (self.spans[i][0], at)
        self._cache.clear()

    def rename(self, resource_id: str, name: str) -> None:
        i = self.index[resource_id]
        res = self.resources[i]
        renamed = CdnResource(res.id, name, res.cname, res.kind)
        self.resources = (*self.resources[:i], renamed, *self.resources[i + 1 :])


_ZERO = array("d", bytes(8 * N_COLS))  # a minute without traffic (never changed in place)
