"""The exporter in a process of its own, for honest CPU and RSS figures.

``python -m bench.exporter_proc --config raw.json`` builds settings with ``parse_config``,
serves ``create_app`` (the real daemon: scheduler, pollers, renderer) on a free port, prints
``{"base_url", "pid"}`` as JSON and serves until SIGTERM. One extra route for the benchmark:

``POST /_bench/refresh?account=A`` runs one full refresh of the account -- traffic totals and
per-resource (a fresh poller, so it reads the newest ready minute), restream status and
history, DVR -- all at once, and waits until the renderer has swapped in an exposition containing
the result (``swap_seconds``: from the end of the polls, the renderer's 0.2 s debounce
included); then renders once more with nothing changed (``rerender_seconds``, what the
renderer's idle 5-second tick costs). While it runs, a probe task
measures how late the event loop wakes it (5 ms sleeps) and a gc callback times the
collector's pauses. Replies with the timings as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import time
from asyncio import events
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from bench.procs import serve_until_signal
from exporter.config import Settings, parse_config
from exporter.dvr import DvrPoller
from exporter.dvr.reply import DvrReader
from exporter.dvr.settings import DVR_SECTION
from exporter.exposition import Store
from exporter.restream import RestreamPoller
from exporter.restream.reply import RestreamReader
from exporter.restream.settings import RESTREAM_SECTION
from exporter.runtime.context import Context
from exporter.runtime.tuning import tune_for_serving
from exporter.support.logs import Redactor, configure_logging
from exporter.traffic import TrafficPoller
from exporter.traffic.reply import MetricsEndpoint
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.web.app import CTX
from exporter.web.daemon import create_app

PROBE_SECONDS = 0.005
SWAP_POLLS = 10_000  # 2 ms apart: give up waiting for the renderer after ~20 s


class LagProbe:
    """Sleeps ``PROBE_SECONDS`` in a loop and keeps the worst oversleep: the loop's stall."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(PROBE_SECONDS)
            self.worst = max(self.worst, time.perf_counter() - started - PROBE_SECONDS)

    def __enter__(self) -> LagProbe:
        self.worst = 0.0
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


class GcWatch:
    """The longest garbage-collector pause (any generation) while active."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.collections = 0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.worst = max(self.worst, time.perf_counter() - self._started)
            self.collections += 1

    def __enter__(self) -> GcWatch:
        self.worst, self.collections = 0.0, 0
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


class SliceWatch:
    """The longest single callback the event loop ran while active (a task's step between two
    awaits, a transport's read): the longest slice of work that held the loop, collector
    pauses and waits for the GIL inside it included. Every ``asyncio.Handle`` run is timed
    (two clock reads a callback), so it is on only during a refresh."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.where = ""
        self._run: Callable[[asyncio.Handle], None] | None = None

    def _name(self, handle: asyncio.Handle) -> str:
        callback = getattr(handle, "_callback", None)
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, asyncio.Task):
            return getattr(owner.get_coro(), "__qualname__", owner.get_name())
        return getattr(callback, "__qualname__", repr(callback))

    def __enter__(self) -> SliceWatch:
        self.worst, self.where = 0.0, ""
        run = self._run = events.Handle._run
        watch = self

        def timed(handle: asyncio.Handle) -> None:
            started = time.perf_counter()
            try:
                run(handle)
            finally:
                took = time.perf_counter() - started
                if took > watch.worst:
                    watch.worst, watch.where = took, watch._name(handle)

        events.Handle._run = timed  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._run is not None:
            events.Handle._run = self._run  # type: ignore[method-assign,assignment]


class Refresher:
    """Pollers of the bench's own, sharing the daemon's client, store and settings."""

    def __init__(self, ctx: Context) -> None:
        s = ctx.settings
        self.ctx = ctx
        self.restream = RestreamPoller(
            RestreamReader(ctx.client),
            ctx.store,
            ctx.clock,
            RESTREAM_SECTION.of(s),
            ctx.redactor,
            fingerprint_secret=s.upstream.token or s.upstream.password,
        )
        streams = {a.name: a.dvr_streams for a in (s.accounts or ())}
        self.dvr = DvrPoller(
            DvrReader(ctx.client), ctx.store, ctx.clock, DVR_SECTION.of(s), streams
        )
        self._refreshes = 0

    def traffic(self) -> TrafficPoller:
        """A poller without history, so its poll reads the newest ready minute (2 requests);
        with a state file when the daemon has one (a new, empty file), so the refresh also
        writes the state as the daemon's poll does."""
        ctx = self.ctx
        path = ""
        if TRAFFIC_SECTION.of(ctx.settings).state_file:
            self._refreshes += 1
            path = f"{TRAFFIC_SECTION.of(ctx.settings).state_file}.refresh-{self._refreshes}"
            Path(
                f"{TRAFFIC_SECTION.of(ctx.settings).state_file}.refresh-{self._refreshes - 1}"
            ).unlink(missing_ok=True)
        settings = dataclasses.replace(TRAFFIC_SECTION.of(ctx.settings), state_file=path)
        return TrafficPoller(
            MetricsEndpoint(ctx.client), ctx.store, ctx.metrics, ctx.clock, settings
        )

    async def refresh(self, account: str) -> dict[str, Any]:
        store = self.ctx.store
        with LagProbe() as probe, GcWatch() as collector, SliceWatch() as slices:
            started = time.perf_counter()
            await asyncio.gather(
                self.traffic().poll(account),
                self.restream.poll(account),
                self.restream.poll_history(account),
                self.dvr.poll(account),
            )
            polled_at = self.ctx.clock.time()
            polled = time.perf_counter()
            for _ in range(SWAP_POLLS):  # the background renderer's turn (debounced)
                if store.exposition.rendered_at >= polled_at:
                    break
                await asyncio.sleep(0.002)
            swapped = time.perf_counter()
            exposition = await store.render()
            rendered = time.perf_counter()
        return {
            "wall_seconds": swapped - started,
            "poll_seconds": polled - started,
            "swap_seconds": swapped - polled,
            "rerender_seconds": rendered - swapped,
            "loop_lag_seconds": probe.worst,
            "gc_pause_seconds": collector.worst,
            "slice_seconds": slices.worst,
            "slice_where": slices.where,
            "gc_collections": collector.collections,
            "series": exposition.series,
        }


def storage_bytes(store: Store) -> dict[str, float]:
    """Bytes the store holds for its samples: label tuples counted once however many
    fragments share them, label strings not counted (resource names and the like, shared
    by a resource's ~114 series). The compressed text is the gzip body's size besides."""
    seen: set[int] = set()
    samples = series = 0
    keys = store.keys()  # a sorted list (the store is not a mapping)
    for key in keys:
        fragment = store.fragment(key, include_stale=True)
        if fragment is None:
            continue
        samples += fragment.nbytes(seen)
        series += fragment.series_count()
    return {
        "series": series,
        "sample_bytes": samples,
        "bytes_per_series": samples / series if series else float("nan"),
    }


def _settings(path: str) -> Settings:
    return parse_config(json.loads(Path(path).read_text(encoding="utf-8")), env={})


async def _run(settings: Settings, tune: bool) -> None:
    redactor = configure_logging("warning", "json", Redactor(settings.secrets()))
    app = await create_app(settings, redactor=redactor)
    if tune:
        tune_for_serving()
    refresher: list[Refresher] = []

    async def refresh(request: web.Request) -> web.Response:
        if not refresher:
            refresher.append(Refresher(request.app[CTX]))
        return web.json_response(await refresher[0].refresh(request.query["account"]))

    async def storage(request: web.Request) -> web.Response:
        return web.json_response(storage_bytes(request.app[CTX].store))

    app.router.add_post("/_bench/refresh", refresh)
    app.router.add_get("/_bench/storage", storage)
    await serve_until_signal(app, {"pid": os.getpid()})


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.exporter_proc", description=__doc__)
    p.add_argument("--config", required=True, help="JSON file of the raw config mapping")
    p.add_argument("--untuned", action="store_true", help="without tune_for_serving()")
    args = p.parse_args(argv)
    asyncio.run(_run(_settings(args.config), not args.untuned))


if __name__ == "__main__":
    main()
