"""Profile one full refresh in-process: the simulator in its own process, the pollers here.

``python -m bench.profile --resources 1000 [--sort cumulative] [--top 30] [--only REGEX]``
prints the event loop's slow callbacks (asyncio debug, > 20 ms: what stalls /healthz) during
one refresh, where the loop thread was while it stalled in a second, then a cProfile of the
event-loop thread during a third (worker threads are not in it). Used to find where the cost
of a refresh goes. Tuned as the daemon is (``exporter.runtime.tuning``) unless ``--untuned``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import logging
import pstats
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from bench import procs
from bench.exporter_proc import Refresher
from bench.scale import ACCOUNT, areas_for, exporter_config
from exporter.config import parse_config
from exporter.runtime.service import build_context
from exporter.runtime.tuning import tune_for_serving
from exporter.support.clock import SystemClock
from exporter.support.logs import Redactor, configure_logging

SLOW_CALLBACK_SECONDS = 0.02
STALL_SECONDS = 0.015


class StallSampler(threading.Thread):
    """Samples the event-loop thread's stack every 2 ms while the loop has not ticked for
    ``STALL_SECONDS``: where the loop is stuck, by the innermost project frames."""

    def __init__(self, loop_thread: int) -> None:
        super().__init__(daemon=True)
        self.loop_thread = loop_thread
        self.beat = time.perf_counter()
        self.samples: Counter[str] = Counter()
        self.stopped = threading.Event()

    async def heartbeat(self) -> None:
        while not self.stopped.is_set():
            self.beat = time.perf_counter()
            await asyncio.sleep(0.001)

    def run(self) -> None:
        while not self.stopped.wait(0.002):
            if time.perf_counter() - self.beat < STALL_SECONDS:
                continue
            frame = sys._current_frames().get(self.loop_thread)
            if frame is None:
                continue
            stack = traceback.extract_stack(frame)
            mine = [f for f in stack if "/exporter/" in f.filename or "/bench/" in f.filename]
            where = " < ".join(f"{f.name}:{f.lineno}" for f in reversed(mine[-3:]))
            self.samples[f"{stack[-1].name} [{Path(stack[-1].filename).name}] in {where}"] += 1


async def _profile(resources: int, sort: str, top: int, only: str, tune: bool) -> None:
    restreams, dvr = areas_for(resources, False)
    sim = await procs.start(
        "bench.sim_proc",
        *("--account", ACCOUNT, "--resources", str(resources)),
        *("--restreams", str(restreams), "--dvr", str(dvr)),
    )
    try:
        settings = parse_config(exporter_config(sim.ready), env={})
        redactor = configure_logging("warning", "console", Redactor(settings.secrets()))
        async with aiohttp.ClientSession() as session:
            ctx = build_context(settings, session, SystemClock(), redactor)
            if tune:
                tune_for_serving()
            renderer = asyncio.create_task(ctx.store.run_renderer())
            refresher = Refresher(ctx)
            print("warm-up:", await refresher.refresh(ACCOUNT))
            tracked, frozen = len(gc.get_objects()), gc.get_freeze_count()
            print(f"objects tracked by gc: {tracked} (frozen: {frozen})")
            loop = asyncio.get_running_loop()
            loop.set_debug(True)  # reports callbacks that hold the loop (debug slows them)
            loop.slow_callback_duration = SLOW_CALLBACK_SECONDS
            print("debug run:", await refresher.refresh(ACCOUNT))
            loop.set_debug(False)
            sampler = StallSampler(threading.get_ident())
            sampler.start()
            beating = asyncio.create_task(sampler.heartbeat())
            print("sampled run:", await refresher.refresh(ACCOUNT))
            sampler.stopped.set()
            await beating
            print("loop stuck > 15 ms, 2 ms samples by place:")
            for place, count in sampler.samples.most_common(15):
                print(f"  {count:4d}  {place}")
            profiler = cProfile.Profile()
            started = time.perf_counter()
            profiler.enable()
            timing = await refresher.refresh(ACCOUNT)
            profiler.disable()
            print(f"refresh: {timing} ({time.perf_counter() - started:.2f} s profiled)")
            t = time.perf_counter()
            exposition = ctx.store.render_sync()
            print(
                f"render_sync on its own: {time.perf_counter() - t:.3f} s, "
                f"{exposition.series} series, {len(exposition.plain)} bytes"
            )
            renderer.cancel()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(only, top)
        print(out.getvalue())
    finally:
        await sim.stop()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    p.add_argument("--resources", type=int, default=1000)
    p.add_argument("--sort", default="cumulative", help="pstats sort key (cumulative, tottime)")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--only", default="", help="regular expression on file:function names")
    p.add_argument("--untuned", action="store_true", help="without tune_for_serving()")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)  # asyncio reports slow callbacks as warnings
    asyncio.run(_profile(args.resources, args.sort, args.top, args.only, not args.untuned))


if __name__ == "__main__":
    main()
