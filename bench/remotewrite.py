"""What the remote-write output costs, with it off and on side by side in one run.

``python -m bench.remotewrite [--scales 1000,5000] [--warmup-seconds S] [--steady-seconds S]``

For each scale: two simulators (the same figures), two exporters (``bench.exporter_proc``, the
real daemon) with the same config but ``remote_write`` on in one, sending to a receiver in this
process that counts requests, bytes and samples and answers 204. Both exporters run at the same
time, scraped alike every 15 s, so the load of a shared machine falls on both: the ratios on/off
are the figures to read, the absolute ones move with the machine. Per exporter over the steady
phase: CPU s/min, RSS and its peak, the worst ``/healthz`` latency (sampled every 50 ms) and
how many answers took over 50 ms, the requests to its simulator a minute; for the receiver:
requests, bytes (snappy, as sent) and samples a minute.

A minute is written once its last settle read is done, so both run with
``traffic.delay_seconds: 0`` and ``traffic.revisit_minutes: 1``: a minute is final about two
minutes after it closed and the warm-up reaches the steady state in minutes (with the
defaults, 120 s and 5, it would take ten). What the output adds to the platform requests at
the defaults is in docs/windowing.md (*Request cost*) and check-config's cost line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench import procs
from bench.measure import fetch, sample_health
from bench.scale import ACCOUNT, SCRAPE_INTERVAL, areas_for, exporter_config, wait_ready
from exporter.remotewrite.wire import count

HEALTH_EVERY = 0.05
SLOW_MS = 50.0  # the loop-stall target of docs/performance.md
READY_SECONDS = 300.0


@dataclass
class Side:
    """One exporter's figures over the steady phase."""

    cpu_s_per_min: float = float("nan")
    rss_mb: float = float("nan")
    peak_rss_mb: float = float("nan")
    worst_healthz_ms: float = float("nan")
    slow_healthz: int = 0  # /healthz answers slower than SLOW_MS
    healthz: int = 0  # /healthz answers in all
    upstream_per_min: float = float("nan")
    traffic_per_min: float = float("nan")  # of them, the traffic area's


@dataclass
class Row:
    resources: int
    off: Side = field(default_factory=Side)
    on: Side = field(default_factory=Side)
    requests_per_min: float = float("nan")
    bytes_per_min: float = float("nan")
    samples_per_min: float = float("nan")
    steady_seconds: float = 0.0


@dataclass
class Receiver:
    """Counts what the exporter writes (every body, at the time it came) and answers 204."""

    bodies: list[tuple[float, int, int]] = field(default_factory=list)  # time, bytes, samples

    async def write(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.bodies.append((time.time(), len(body), count(body)))
        return web.Response(status=204)

    def between(self, start: float, end: float) -> tuple[int, int, int]:
        """(requests, bytes, samples) received in [start, end)."""
        got = [(b, s) for t, b, s in self.bodies if start <= t < end]
        return len(got), sum(b for b, _ in got), sum(s for _, s in got)


def ratio(on: float, off: float) -> str:
    return f"{on / off:.2f}x" if off > 0 else "n/a"


HEADERS = (
    "resources",
    "written a minute: requests / samples / bytes",
    "CPU s/min off / on (ratio)",
    "RSS MB off / on (ratio)",
    "peak RSS MB off / on",
    "worst /healthz ms off / on (answers > 50 ms)",
    "upstream req/min off / on (traffic)",
)


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (docs/performance.md)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---:|" * len(HEADERS)]
    for r in rows:
        cells = (
            f"{r.resources}",
            f"{r.requests_per_min:.1f} / {r.samples_per_min:,.0f} / "
            f"{r.bytes_per_min / 1024:,.0f} kB",
            f"{r.off.cpu_s_per_min:.2f} / {r.on.cpu_s_per_min:.2f} "
            f"({ratio(r.on.cpu_s_per_min, r.off.cpu_s_per_min)})",
            f"{r.off.rss_mb:.0f} / {r.on.rss_mb:.0f} ({ratio(r.on.rss_mb, r.off.rss_mb)})",
            f"{r.off.peak_rss_mb:.0f} / {r.on.peak_rss_mb:.0f}",
            f"{r.off.worst_healthz_ms:.0f} / {r.on.worst_healthz_ms:.0f} "
            f"({r.off.slow_healthz} of {r.off.healthz} / {r.on.slow_healthz} of {r.on.healthz})",
            f"{r.off.upstream_per_min:.1f} / {r.on.upstream_per_min:.1f} "
            f"({r.off.traffic_per_min:.1f} / {r.on.traffic_per_min:.1f})",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def config(sim: dict[str, Any], state: Path, receiver: str | None) -> dict[str, Any]:
    raw = exporter_config(sim, str(state))
    raw["traffic"] |= {"delay_seconds": 0, "revisit_minutes": 1}
    if receiver is not None:
        raw["remote_write"] = {"url": receiver}
    return raw


async def _exporter(tmp: Path, name: str, sim: procs.Child, receiver: str | None) -> procs.Child:
    path = tmp / f"{name}.json"
    raw = config(sim.ready, tmp / f"{name}-state.json", receiver)
    path.write_text(json.dumps(raw), encoding="utf-8")
    return await procs.start("bench.exporter_proc", "--config", str(path))


async def _upstream(
    session: aiohttp.ClientSession, sim: procs.Child, t0: float, t1: float
) -> tuple[int, int]:
    """Requests the simulator answered in [t0, t1): all, and the traffic area's."""
    async with session.get(f"{sim.ready['base_url']}/_sim/requests") as reply:
        log = [r for r in await reply.json() if t0 <= r["time"] < t1]
    return len(log), sum(1 for r in log if r["area"] == "traffic")


async def _scrape(session: aiohttp.ClientSession, base: str, seconds: float) -> None:
    started = time.monotonic()
    while (left := seconds - (time.monotonic() - started)) > 0:
        await fetch(session, f"{base}/metrics")
        await asyncio.sleep(min(SCRAPE_INTERVAL, left))


async def _measure_scale(resources: int, warmup: float, steady: float) -> Row:
    receiver = Receiver()
    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/api/v1/write", receiver.write)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/api/v1/write"
    restreams, dvr = areas_for(resources, False)
    sim_args = ["--account", ACCOUNT, "--resources", str(resources)]
    sim_args += ["--restreams", str(restreams), "--dvr", str(dvr)]
    sims = [await procs.start("bench.sim_proc", *sim_args) for _ in range(2)]
    row = Row(resources)
    exporters: list[procs.Child] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-rw-") as tmp:
            exporters.append(await _exporter(Path(tmp), "off", sims[0], None))
            exporters.append(await _exporter(Path(tmp), "on", sims[1], url))
            connector = aiohttp.TCPConnector(limit_per_host=2)
            async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as s:
                bases = [e.ready["base_url"] for e in exporters]
                await asyncio.gather(*(wait_ready(s, b, READY_SECONDS) for b in bases))
                await asyncio.gather(*(_scrape(s, b, warmup) for b in bases))
                stop = asyncio.Event()
                health = [asyncio.create_task(_health(b, stop)) for b in bases]
                cpu0, t0 = [procs.cpu_times(e.pid) for e in exporters], time.time()
                await asyncio.gather(*(_scrape(s, b, steady) for b in bases))
                cpu1, t1 = [procs.cpu_times(e.pid) for e in exporters], time.time()
                stop.set()
                answers = [await h for h in health]
                minutes = (t1 - t0) / 60
                row.steady_seconds = t1 - t0
                for i, side in enumerate((row.off, row.on)):
                    side.cpu_s_per_min = (sum(cpu1[i]) - sum(cpu0[i])) / minutes
                    side.rss_mb, side.peak_rss_mb = procs.memory_mb(exporters[i].pid)
                    side.worst_healthz_ms = max(answers[i], default=float("nan")) * 1e3
                    side.slow_healthz = sum(1 for a in answers[i] if a * 1e3 > SLOW_MS)
                    side.healthz = len(answers[i])
                    upstream, traffic = await _upstream(s, sims[i], t0, t1)
                    side.upstream_per_min = upstream / minutes
                    side.traffic_per_min = traffic / minutes
                requests, sent, samples = receiver.between(t0, t1)
                row.requests_per_min = requests / minutes
                row.bytes_per_min = sent / minutes
                row.samples_per_min = samples / minutes
            for e in exporters:
                await e.stop()
    finally:
        for child in [*exporters, *sims]:
            await child.stop()
        await runner.cleanup()
    return row


async def _health(base: str, stop: asyncio.Event) -> list[float]:
    async with aiohttp.ClientSession() as session:
        return await sample_health(session, f"{base}/healthz", stop, HEALTH_EVERY)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.remotewrite", description=__doc__)
    p.add_argument("--scales", default="1000,5000", help="resources, comma-separated")
    p.add_argument("--warmup-seconds", type=float, default=240.0)
    p.add_argument("--steady-seconds", type=float, default=240.0)
    args = p.parse_args(argv)
    scales = [int(v) for v in args.scales.split(",") if v.strip()]
    before = procs.machine()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    for scale in scales:
        rows.append(asyncio.run(_measure_scale(scale, args.warmup_seconds, args.steady_seconds)))
        print(f"# scale {scale} done", flush=True)
    after = procs.machine()
    print(table(rows))
    print(
        f"# {started}, {before['cpus']} CPUs, Python {before['python']}, load average "
        f"(1/5/15 min) {'/'.join(f'{v:.2f}' for v in before['load_avg'])} before, "
        f"{'/'.join(f'{v:.2f}' for v in after['load_avg'])} after; warm-up "
        f"{args.warmup_seconds:.0f} s, steady {rows[0].steady_seconds:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
