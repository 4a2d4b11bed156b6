"""What reading one large per-resource traffic reply costs: its body decoded, checked and
parsed into rows (``traffic.read.Reader.halves``, as a first or settle read does on the
worker), at this commit and at another, side by side.

``python -m bench.decode [--resources 25000] [--before HEAD~1] [--runs 5]``

The simulator (``exporter.simulator``) serves the reply: one account of ``--resources`` CDN
resources, one final minute, fetched over HTTP once. Each commit's tree (``--before`` taken
out with ``git archive``) reads the same bytes in a process of its own, once per run: CPU time
of the read, the collector's passes during it (by generation), and in a separate run the
peak of traced memory (tracemalloc) over the body's own bytes. Medians over the runs.
docs/performance.md keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from exporter.simulator.config import SimConfig
from exporter.simulator.server import serve
from exporter.simulator.simulator import Simulator
from exporter.support.clock import FakeClock

ACCOUNT = "bench"
NOW = 1_767_225_600.0 + 3600  # an hour after the simulator's epoch: the minute asked is final
START = int(NOW) - 1800  # the minute asked: [START, START + 60)

# Run in the tree measured: only what both commits have (``Reader.halves`` and its parts).
CHILD = r"""
import gc, json, sys, time, tracemalloc
from exporter.support.clock import FakeClock
from exporter.traffic.read import Reader
from exporter.traffic.reply import Answer
from exporter.traffic.select import ResourceSelector
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.skew import Clocks
from exporter.traffic.windows import Window
from exporter.upstream import Reply, UpstreamClient

path, mode, account, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


class Transport:  # what the read step asks of the client for a body it decodes itself
    @staticmethod
    def checked(area, reply):
        return UpstreamClient.checked(None, area, reply)

    @staticmethod
    def verdict(area, reply, data):
        return False


clock = FakeClock()
reader = Reader(
    None, Clocks(clock, None), ResourceSelector("", "", 0), TrafficSettings(), None, clock,
)
raw = open(path, "rb").read()
answer = Answer(Reply(200, raw, None, "application/json", decoded=False), None, Transport())
del raw
w = Window(start, start + 60)
gc.collect()
if mode == "mem":
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
before = [s["collections"] for s in gc.get_stats()]
cpu = time.process_time()
got, error = reader.halves(account, [answer], [("resources", w)], ["resources"])
cpu = time.process_time() - cpu
passes = [s["collections"] - b for s, b in zip(gc.get_stats(), before)]
assert error is None, error
out = {"cpu": cpu, "passes": passes, "rows": len(got["resources"])}
if mode == "mem":
    out["peak"] = tracemalloc.get_traced_memory()[1] - base
print(json.dumps(out))
"""


async def fetch(resources: int) -> bytes:
    """The simulator's per-resource reply for the minute asked, as sent."""
    config = SimConfig(accounts=(ACCOUNT,), resources_per_account=resources)
    sim = Simulator(config, FakeClock(NOW))
    runner = await serve(sim, "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as session:
            minute = "%Y-%m-%dT%H:%M:00"
            params = {
                "account": ACCOUNT,
                "start": time.strftime(minute, time.gmtime(START)),
                "end": time.strftime(minute, time.gmtime(START + 60)),
            }
            url = f"{runner.base_url}/app/metrics/v1/resources"
            headers = {"CDN-AUTH-TOKEN": sim.token}
            async with session.get(url, params=params, headers=headers) as resp:
                body = await resp.read()
                if resp.status != 200:
                    raise SystemExit(f"simulator: {resp.status} {body[:200]!r}")
                return body
    finally:
        await runner.cleanup()


def tree_of(rev: str, into: Path) -> Path:
    """The ``exporter`` package of commit ``rev``, taken out under ``into``."""
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", top, "archive", rev, "exporter"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(tree: Path, body: Path, mode: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(body), mode, ACCOUNT, str(START)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.decode", description=__doc__)
    p.add_argument("--resources", type=int, default=25000)
    p.add_argument("--before", default="HEAD~1", help="the commit compared with this tree")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp) / "body.json"
        body.write_bytes(asyncio.run(fetch(args.resources)))
        old = Path(tmp) / "before"
        old.mkdir()
        trees = {args.before: tree_of(args.before, old), "this tree": here}
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        peak: dict[str, list[int]] = {name: [] for name in trees}
        passes: dict[str, list[object]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():  # alternated, so both meet the same load
                timed = measure(tree, body, "cpu")
                cpu[name].append(float(str(timed["cpu"])))
                passes[name].append(timed["passes"])
                traced = measure(tree, body, "mem")
                peak[name].append(int(str(traced["peak"])))
        print(
            f"{args.resources:,} resources, body {body.stat().st_size / 2**20:.1f} MiB, "
            f"{args.runs} runs, load {os.getloadavg()[0]:.2f}"
        )
        print(f"{'tree':<12} {'CPU s (median)':>15} {'peak traced MiB':>16}  gc passes (0,1,2)")
        for name in trees:
            print(
                f"{name:<12} {statistics.median(cpu[name]):>15.3f} "
                f"{statistics.median(peak[name]) / 2**20:>16.1f}  {passes[name][-1]}"
            )


if __name__ == "__main__":
    main()
