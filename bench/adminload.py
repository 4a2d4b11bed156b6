"""``python -m bench.adminload``: what read-token traffic costs the scrape.

The simulator (5,000 restream resources) and the exporter (the real daemon, admin API on)
run in processes of their own. The benchmark times ``GET /metrics`` one after another, first
with nothing else going on (idle), then while 30 clients read the 5,000-resource list through
the admin API with the read token as fast as it answers, and prints both medians, their ratio
and how many admin reads were answered. The admin read budget is raised for the run
(``admin.reads_per_minute``) so every read reaches the platform: the worst case of encoding,
not the 429s the default budget would answer. Printed to read, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from bench.procs import Child, start

READ_TOKEN = "bench-read-token-0123456789"
WRITE_TOKEN = "bench-write-token-0123456789"


async def _metrics_ms(session: aiohttp.ClientSession, url: str, count: int) -> list[float]:
    out = []
    for _ in range(count):
        started = time.perf_counter()
        async with session.get(url) as resp:
            await resp.read()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def _reader(session: aiohttp.ClientSession, url: str, stop: asyncio.Event) -> int:
    done = 0
    headers = {"Authorization": f"Bearer {READ_TOKEN}"}
    while not stop.is_set():
        async with session.get(url, headers=headers) as resp:
            await resp.read()
            done += resp.status == 200
    return done


async def run(restreams: int, readers: int, probes: int, settle: float) -> dict[str, float]:
    sim = await start("bench.sim_proc", "--restreams", str(restreams), "--resources", "50")
    exporter: Child | None = None
    try:
        raw = {
            "upstream": {"base_url": sim.ready["base_url"], "token": sim.ready["token"]},
            "accounts": [sim.ready["account"]],
            "admin": {
                "enabled": True,
                "read_token": READ_TOKEN,
                "write_token": WRITE_TOKEN,
                "reads_per_minute": 1_000_000,
            },
            "log": {"level": "warn"},
        }
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.json"
            config.write_text(json.dumps(raw), encoding="utf-8")
            exporter = await start("bench.exporter_proc", "--config", str(config))
        base = exporter.ready["base_url"]
        metrics = f"{base}/metrics"
        listing = f"{base}/api/v1/restream/{sim.ready['account']}/resources"
        async with aiohttp.ClientSession() as session:
            await asyncio.sleep(settle)  # the first polls and render
            idle = await _metrics_ms(session, metrics, probes)
            stop = asyncio.Event()
            tasks = [asyncio.create_task(_reader(session, listing, stop)) for _ in range(readers)]
            await asyncio.sleep(1.0)  # every reader has a read in flight
            loaded = await _metrics_ms(session, metrics, probes)
            stop.set()
            reads = sum(await asyncio.gather(*tasks))
        return {
            "idle_median_ms": statistics.median(idle),
            "loaded_median_ms": statistics.median(loaded),
            "ratio": statistics.median(loaded) / statistics.median(idle),
            "admin_reads_answered": float(reads),
        }
    finally:
        if exporter is not None:
            await exporter.stop()
        await sim.stop()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.adminload", description=__doc__)
    p.add_argument("--restreams", type=int, default=5000, help="restream resources listed")
    p.add_argument("--readers", type=int, default=30, help="concurrent read-token clients")
    p.add_argument("--probes", type=int, default=100, help="/metrics requests per phase")
    p.add_argument("--settle", type=float, default=15.0, help="seconds before measuring")
    args = p.parse_args(argv)
    figures = asyncio.run(run(args.restreams, args.readers, args.probes, args.settle))
    for name, value in figures.items():
        print(f"{name:<22} {value:10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
