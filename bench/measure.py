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
    beside it (``side_by_side``'s ``beside``), so a slow moment of the machine (load from
    others, the CPU clock) slows both sides of a pair and cancels out instead of moving one
    median and not the other."""
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


async def scrape_time(session: aiohttp.ClientSession, url: str) -> tuple[float, float]:
    """(seconds to the last byte, seconds to the headers) of one gzip GET whose body is read
    and dropped chunk by chunk: the client's own gathering of megabytes into one buffer (an
    allocation whose cost depends on this process's heap, not on the server) stays out of the
    figure. A body shorter than its Content-Length is an error."""
    started = time.perf_counter()
    async with session.get(url, headers=GZIP) as reply:
        headers_at = time.perf_counter()
        received = 0
        async for chunk in reply.content.iter_any():
            received += len(chunk)
        elapsed = time.perf_counter() - started
        reply.raise_for_status()
        if reply.content_length is not None and received != reply.content_length:
            raise RuntimeError(f"{url}: {received} of {reply.content_length} bytes received")
        return elapsed, headers_at - started


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
    beside: list[float] | None = None,
) -> tuple[list[float], list[float]]:
    """Scrape both servers in turn with the same client, one baseline scrape then a share of
    the exporter scrapes, so both see the same conditions (load from others, CPU clock).

    Stops early (after ``min_rounds``) once ``budget_seconds`` are spent: the baseline takes
    seconds per scrape at thousands of resources. ``exporter_headers`` collects the time to
    the exporter's response headers; ``static`` the latency of ``static_url`` (the same body
    served as fixed bytes), scraped before the first exporter scrape of a round and after
    each one, so the two alternate strictly and every scrape follows one of the other server
    (a server scraped twice in a row answers faster the second time: at 5,000 resources
    ~0.2 ms, which a floor scraped first and second in turn gave to the floor alone);
    ``beside`` gets, for each exporter scrape, the mean of the floor scrapes just before and
    just after it."""
    exp: list[float] = []
    base: list[float] = []
    rounds = max(1, baseline_samples)
    per_round = max(1, math.ceil(exporter_samples / rounds))
    started = time.monotonic()
    for done in range(rounds):
        if done >= min_rounds and time.monotonic() - started > budget_seconds:
            break
        if baseline_url is not None:  # None: no baseline at this scale (the floor only)
            base.append((await scrape_time(session, baseline_url))[0])
        before = 0.0
        if static_url is not None and static is not None:
            before = (await scrape_time(session, static_url))[0]
            static.append(before)
        for _ in range(per_round):
            elapsed, to_headers = await scrape_time(session, exporter_url)
            exp.append(elapsed)
            if exporter_headers is not None:
                exporter_headers.append(to_headers)
            if static_url is not None and static is not None:
                after = (await scrape_time(session, static_url))[0]
                static.append(after)
                if beside is not None:
                    beside.append((before + after) / 2)
                before = after
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
