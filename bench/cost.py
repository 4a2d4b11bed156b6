"""What the exporter costs the platform and the user's Prometheus at each scale, and its tables:
upstream requests a minute by area as the simulator's request log counted them over the steady
phase, beside the exporter's own estimate for the same config (``exporter.runtime.cost``, what
check-config prints); the scrape's samples and bytes in both formats the exporter serves; and
the rule groups' evaluation time on a real Prometheus scraping it (``bench.prom``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import aiohttp

from bench.fmt import number as _f
from bench.fmt import size as _size
from bench.prom import Figures
from exporter.config import parse_config
from exporter.runtime.cost import request_cost

if TYPE_CHECKING:  # bench.scale imports this module for its measuring helpers
    from bench.scale import Result

AREAS = ("traffic", "restream", "dvr", "talking_head")
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def estimate(raw: dict[str, Any], restream_resources: int) -> dict[str, float]:
    """The exporter's estimate of requests a minute by area for the config ``raw``, the
    restream history's share at ``restream_resources`` (the platform's count, all accounts)."""
    settings = parse_config(raw, env={})
    return {c.area: c.fixed + c.per_resource * restream_resources for c in request_cost(settings)}


def samples(body: bytes) -> int:
    """Sample lines of an exposition (not blank, not a comment)."""
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


async def openmetrics(session: aiohttp.ClientSession, url: str) -> tuple[bytes, bytes]:
    """The OpenMetrics exposition at ``url``, plain and as sent gzipped (the session must not
    decompress); raises when the answer is not OpenMetrics or not gzip."""
    bodies = []
    for encoding in ("identity", "gzip"):
        headers = {"Accept": OPENMETRICS, "Accept-Encoding": encoding}
        async with session.get(url, headers=headers) as reply:
            reply.raise_for_status()
            kind = reply.headers.get("Content-Type", "")
            if not kind.startswith("application/openmetrics-text"):
                raise RuntimeError(f"/metrics answered {kind!r} to an OpenMetrics Accept")
            if reply.headers.get("Content-Encoding", "") != ("gzip" if encoding == "gzip" else ""):
                raise RuntimeError(f"/metrics did not answer {encoding} OpenMetrics")
            bodies.append(await reply.read())
    return bodies[0], bodies[1]


HEADERS = (
    "resources",
    "samples text/OpenMetrics",
    "text bytes plain/gzip",
    "OpenMetrics bytes plain/gzip",
    *(f"{a} req/min (estimate)" for a in AREAS),
    "total req/min (estimate)",
    "Prometheus scrape s (samples)",
    "head series",
    "Prometheus RSS MB (peak)",
    "rules ms a round (worst)",
)


def _upstream(r: Result) -> list[str]:
    minutes = r.steady_seconds / 60
    measured = {a: n / minutes for a, n in r.upstream_by_area.items()} if minutes else {}
    cells = [
        f"{_f(measured.get(a, 0.0))} ({_f(r.upstream_estimate.get(a, math.nan))})" for a in AREAS
    ]
    total = sum(measured.values())
    estimated = sum(r.upstream_estimate.values()) if r.upstream_estimate else math.nan
    return [*cells, f"{_f(total)} ({_f(estimated)})"]


def _prometheus(p: Figures | None) -> list[str]:
    if p is None:
        return ["n/a"] * 4
    return [
        f"{_f(p.scrape_s, 2)} ({p.samples_scraped})",
        str(p.head_series),
        f"{_f(p.rss_mb, 0)} ({_f(p.peak_rss_mb, 0)})",
        f"{_f(p.round_ms, 1)} ({_f(p.worst_round_ms, 1)})",
    ]


def row(r: Result) -> tuple[str, ...]:
    return (
        str(r.resources),
        f"{r.series}/{r.openmetrics_samples}",
        f"{_size(r.bytes_plain)}/{_size(r.bytes_gzip)}",
        f"{_size(r.bytes_openmetrics_plain)}/{_size(r.bytes_openmetrics_gzip)}",
        *_upstream(r),
        *_prometheus(r.prometheus),
    )


RULE_HEADERS = (
    "resources",
    "rule group",
    "rules",
    "interval in rules.yml",
    "evaluations",
    "median ms",
    "max ms",
    "last ms (metric)",
)


def rule_rows(r: Result) -> list[tuple[str, ...]]:
    """A row per rule group and one for every group together, or none without Prometheus."""
    p = r.prometheus
    if p is None:
        return []
    rows = [
        (str(r.resources), g.name, str(g.rules), g.interval or "global",
         str(g.evaluations), _f(g.median_ms, 2), _f(g.max_ms, 2), _f(g.last_ms, 2))
        for g in p.groups
    ]  # fmt: skip
    total = (str(r.resources), "every group", str(sum(g.rules for g in p.groups)), "",
             "", _f(p.round_ms, 2), _f(p.worst_round_ms, 2), "")  # fmt: skip
    return [*rows, total]


def rows(results: Sequence[Result]) -> list[tuple[str, ...]]:
    return [row(r) for r in results]


def all_rule_rows(results: Sequence[Result]) -> list[tuple[str, ...]]:
    return [row for r in results for row in rule_rows(r)]
