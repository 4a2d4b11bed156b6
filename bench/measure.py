"""Client-side measurements over HTTP: scrape latency, /healthz sampling, summary statistics."""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Sequence

import aiohttp

GZIP = {"Accept-Encoding": "gzip"}
PLAIN = {"Accept-Encoding": "identity"}  # aiohttp asks for gzip unless told otherwise


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def paired_ratio(times: Sequence[float], floors: Sequence[float]) -> float:
    """The median of ``times[i] / floors[i]``: each scrape against the floor measured right
    beside it, so a slow moment of the machine (load from others, the CPU clock) slows both
    sides of a pair and cancels out instead of moving one median and not the other."""
    ratios = [t / f for t, f in zip(times, floors, strict=True) if f > 0]
    return median(ratios)


async def fetch(
    session: aiohttp.ClientSession, url: str, gzip: bool = True
) -> tuple[float, bytes, str]:
    """(seconds, body as sent, Content-Encoding) of one GET; the body is not decompressed
    (the session is made with ``auto_decompress=False``)."""
    elapsed, _, body, encoding = await timed_fetch(session, url, gzip)
    return elapsed, body, encoding


async def timed_fetch(
    session: aiohttp.ClientSession, url: str, gzip: bool = True
) -> tuple[float, float, bytes, str]:
    """Like ``fetch``, with the time to the response headers as the second item."""
    started = time.perf_counter()
    async with session.get(url, headers=GZIP if gzip else PLAIN) as reply:
        headers_at = time.perf_counter()
        body = await reply.read()
        elapsed = time.perf_counter() - started
        reply.raise_for_status()
        return elapsed, headers_at - started, body, reply.headers.get("Content-Encoding", "")


async def side_by_side(
    session: aiohttp.ClientSession,
    exporter_url: str,
    baseline_url: str | None,
    exporter_samples: int,
    baseline_samples: int,
    budget_seconds: float = float("inf"),
    min_rounds: int = 3,
    exporter_headers: list[float] | None = None,
    static_url: str | None = None,
    static: list[float] | None = None,
) -> tuple[list[float], list[float]]:
    """Scrape both servers in turn with the same client, one baseline scrape then a share of
    the exporter scrapes, so both see the same conditions (load from others, CPU clock).

    Stops early (after ``min_rounds``) once ``budget_seconds`` are spent: the baseline takes
    seconds per scrape at thousands of resources. ``exporter_headers`` collects the time to
    the exporter's response headers; ``static`` the latency of ``static_url`` (the same body
    served as fixed bytes), scraped beside each exporter scrape: after it, then before the
    next one, in turn (``static[i]`` pairs with the i-th exporter scrape; neither always
    goes first)."""
    exp: list[float] = []
    base: list[float] = []
    rounds = max(1, baseline_samples)
    per_round = max(1, math.ceil(exporter_samples / rounds))
    started = time.monotonic()
    for done in range(rounds):
        if done >= min_rounds and time.monotonic() - started > budget_seconds:
            break
        if baseline_url is not None:  # None: no baseline at this scale (the floor only)
            base.append((await fetch(session, baseline_url))[0])
        for _ in range(per_round):
            paired = static_url is not None and static is not None
            static_first = paired and len(exp) % 2 == 1
            if static_first and static_url is not None and static is not None:
                static.append((await fetch(session, static_url))[0])
            elapsed, to_headers, _, _ = await timed_fetch(session, exporter_url)
            exp.append(elapsed)
            if exporter_headers is not None:
                exporter_headers.append(to_headers)
            if paired and not static_first and static_url is not None and static is not None:
                static.append((await fetch(session, static_url))[0])
    return exp, base


async def sample_health(
    session: aiohttp.ClientSession, url: str, stop: asyncio.Event, every: float = 0.005
) -> list[float]:
    """GET ``url`` every ``every`` seconds until ``stop``; the latency of each."""
    out: list[float] = []
    while not stop.is_set():
        out.append((await fetch(session, url, gzip=False))[0])
        await asyncio.sleep(every)
    return out
