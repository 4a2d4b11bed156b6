"""What the garbage collector visits in a steady daemon, in process: the simulator in its own
process, the daemon (``create_app``, scheduled polls, tuned as served) in this one.

``python -m bench.gccensus --resources 25000 [--seconds 200] [--sample 20000] [--top 25]``

Serves for ``--seconds`` while a ``gc.callbacks`` hook times every collection (by generation,
and whether the event-loop thread or a worker triggered it) and a probe measures the loop's
worst oversleep; then counts the objects the collector tracks, by generation and type, and
where a sample of the oldest generation's objects is held (the first object up the chain of
referrers that is not a list, dict, tuple, set, array or cell, and the attribute naming the
link), and times full collections on the loop. docs/performance.md keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import statistics
import tempfile
import threading
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from bench import procs
from bench.exporter_proc import LagProbe
from bench.scale import ACCOUNT, areas_for, exporter_config
from exporter.config import parse_config
from exporter.runtime.tuning import tune_for_serving
from exporter.support.logs import Redactor, configure_logging
from exporter.web.daemon import create_app

PLAIN = (list, dict, tuple, set, frozenset, array)  # containers walked up through
DEPTH = 8  # links walked up at most


class GcLog:
    """Every collection while installed: generation, seconds, and the thread it ran on."""

    def __init__(self, loop_thread: int, snapshot_ms: float) -> None:
        self.loop_thread = loop_thread
        self.pauses: dict[tuple[int, bool], list[float]] = defaultdict(list)
        self.cpu: dict[tuple[int, bool], list[float]] = defaultdict(list)
        self._started = self._cpu = 0.0
        self.snapshot_ms = snapshot_ms
        self.snapshots: list[tuple[float, Counter[str]]] = []  # slow full collections' survivors

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started, self._cpu = time.perf_counter(), time.thread_time()
            return
        took = time.perf_counter() - self._started
        on_loop = threading.get_ident() == self.loop_thread
        self.pauses[(info["generation"], on_loop)].append(took)
        self.cpu[(info["generation"], on_loop)].append(time.thread_time() - self._cpu)
        if info["generation"] == 2 and took * 1e3 > self.snapshot_ms and len(self.snapshots) < 3:
            self.snapshots.append((took, Counter(_name(o) for o in gc.get_objects())))

    def report(self) -> list[str]:
        out = []
        for (gen, on_loop), p in sorted(self.pauses.items()):
            where = "loop" if on_loop else "worker"
            cpu = self.cpu[(gen, on_loop)]
            out.append(
                f"  gen {gen} on {where:6}: {len(p):6d} collections, "
                f"median {statistics.median(p) * 1e3:7.2f} ms, worst {max(p) * 1e3:7.1f} ms, "
                f"total {sum(p):6.2f} s; CPU median {statistics.median(cpu) * 1e3:7.2f} ms, "
                f"worst {max(cpu) * 1e3:7.1f} ms"
            )
        return out


def _name(obj: object) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def census() -> list[str]:
    """Tracked objects by generation and type, and the frozen count."""
    out = [f"frozen (permanent generation): {gc.get_freeze_count()}"]
    for gen in range(3):
        objs = gc.get_objects(gen)
        kinds = Counter(_name(o) for o in objs)
        out.append(f"generation {gen}: {len(objs)} tracked")
        out += [f"  {n:9d}  {k}" for k, n in kinds.most_common(12)]
        refs: Counter[str] = Counter()
        for o in objs:
            refs[_name(o)] += len(gc.get_referents(o))
        out.append(f"  references they hold: {sum(refs.values())}")
        out += [f"  {n:9d}  {k}" for k, n in refs.most_common(8)]
        biggest = sorted(objs, key=lambda o: len(gc.get_referents(o)), reverse=True)[:5]
        out += [f"  largest: {_name(o)} of {len(gc.get_referents(o))}" for o in biggest]
        del objs, biggest
    return out


def _link(parent: object, child: object) -> str:
    """The attribute or key of ``parent`` that holds ``child`` (its type name if none)."""
    if isinstance(parent, dict):
        for k, v in parent.items():
            if v is child:
                return f"[{type(k).__name__}]"
        return "{key}"
    slots = [s for c in type(parent).__mro__ for s in getattr(c, "__slots__", ())]
    for s in (*slots, *getattr(parent, "__dict__", {})):
        if getattr(parent, s, None) is child:
            return f".{s}"
    if getattr(parent, "__dict__", None) is child:
        return ".__dict__"
    return f"<{_name(parent)}>"


def owners(sample_size: int, rng: random.Random) -> list[str]:
    """Where a random sample of the oldest generation's objects is held: the chain of plain
    containers up to the first other object, counted and scaled to the generation."""
    objs = gc.get_objects(2)
    total = len(objs)
    sample = rng.sample(objs, min(sample_size, total))
    chains: dict[int, list[str]] = {id(o): [_name(o)] for o in sample}
    tips: dict[int, object] = {id(o): o for o in sample}  # sample id -> object walked up to
    for _ in range(DEPTH):
        wanted: dict[int, list[int]] = defaultdict(list)
        for sid, tip in tips.items():
            if isinstance(tip, PLAIN) or type(tip).__name__ == "cell":
                wanted[id(tip)].append(sid)
        if not wanted:
            break
        parents: dict[int, object] = {}
        for o in objs:
            for r in gc.get_referents(o):
                if id(r) in wanted and id(r) not in parents and r is not o:
                    parents[id(r)] = o
        moved = {}
        for tid, sids in wanted.items():
            parent = parents.get(tid)
            for sid in sids:
                if parent is None:
                    chains[sid].append("(no tracked referrer)")
                    moved[sid] = None
                else:
                    chains[sid].append(f"{_link(parent, tips[sid])} of {_name(parent)}")
                    moved[sid] = parent
        for sid, p in moved.items():
            if p is None:
                tips.pop(sid)
            else:
                tips[sid] = p
    kinds = Counter(" < ".join(c) for c in chains.values())
    scale = total / max(1, len(sample))
    del objs, sample, tips
    return [f"  ~{int(n * scale):9d}  {chain}" for chain, n in kinds.most_common(40)]


def full_collections(times: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of ``times`` full collections in a row."""
    out = []
    for _ in range(times):
        t, c = time.perf_counter(), time.thread_time()
        gc.collect()
        out.append((time.perf_counter() - t, time.thread_time() - c))
    return out


def _ms(pairs: list[tuple[float, float]]) -> str:
    return ", ".join(f"{w * 1e3:.0f} ({c * 1e3:.0f} CPU)" for w, c in pairs)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    restreams, dvr = areas_for(args.resources, False)
    sim = await procs.start(
        "bench.sim_proc",
        *("--account", ACCOUNT, "--resources", str(args.resources)),
        *("--restreams", str(restreams), "--dvr", str(dvr)),
    )
    try:
        with tempfile.TemporaryDirectory(prefix="gccensus-") as tmp:
            raw = exporter_config(sim.ready, str(Path(tmp) / "traffic-state.json"))
            settings = parse_config(raw, env={})
            redactor = configure_logging("warning", "json", Redactor(settings.secrets()))
            app = await create_app(settings, redactor=redactor)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            tune_for_serving()
            log = GcLog(threading.get_ident(), args.snapshot_ms)
            gc.callbacks.append(log)
            started = time.monotonic()
            with LagProbe() as probe:
                while time.monotonic() - started < args.seconds:
                    await asyncio.sleep(min(30.0, args.seconds))
                    print(
                        f"# {time.monotonic() - started:5.0f} s: worst loop lag so far "
                        f"{probe.worst * 1e3:.0f} ms, gc counts {gc.get_count()}",
                        flush=True,
                    )
                    if sim.proc.returncode is not None:
                        raise RuntimeError(f"the simulator exited ({sim.proc.returncode})")
                lag = probe.worst
            gc.callbacks.remove(log)
            print(f"served {args.seconds:.0f} s, worst loop lag {lag * 1e3:.0f} ms; collections:")
            print("\n".join(log.report()))
            print("\n".join(census()))
            print(f"where a sample of {args.sample} of generation 2 is held:")
            print("\n".join(owners(args.sample, random.Random(7))))
            full = full_collections(args.full)
            print(f"full collections on the loop, ms: {_ms(full)}")
            await runner.cleanup()
            for took, kinds in log.snapshots:
                print(f"survivors of a full collection of {took * 1e3:.0f} ms: {kinds.total()}")
                print("\n".join(f"  {n:9d}  {k}" for k, n in kinds.most_common(15)))
            gc.unfreeze()
            print("unfrozen:")
            print("\n".join(census()))
            whole = full_collections(args.full)
            print(f"full collections of the whole heap, ms: {_ms(whole)}")
            return {
                "lag_ms": lag * 1e3,
                "full_ms": [t * 1e3 for t, _ in full],
                "whole_ms": [t * 1e3 for t, _ in whole],
            }
    finally:
        await sim.stop()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.gccensus", description=__doc__)
    p.add_argument("--resources", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=200.0, help="served before the census")
    p.add_argument("--sample", type=int, default=20_000, help="objects whose holders are found")
    p.add_argument(
        "--snapshot-ms",
        type=float,
        default=100.0,
        help="count the survivors of full collections slower than this (3 at most)",
    )
    p.add_argument("--full", type=int, default=5, help="full collections timed at the end")
    args = p.parse_args(argv)
    print(json.dumps(asyncio.run(_run(args))))


if __name__ == "__main__":
    main()
