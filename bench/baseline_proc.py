"""The naive baseline: the exporter's families served with prometheus-client, rendered on
every scrape (``generate_latest`` + gzip on the event loop), in a process of its own.

At start it reads the exporter's exposition once (``--source``), parses it with
``prometheus_client.parser`` into a collector in a fresh ``CollectorRegistry``, prints its
address as JSON and serves ``/metrics`` until SIGTERM.

``/static`` serves the exporter's gzip body exactly as received, from a bare handler: the
floor of any server that sends those bytes over HTTP (what a scrape costs without any work
that depends on the series).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
from collections.abc import Iterable, Sequence

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from bench.procs import serve_until_signal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# prometheus-client's own servers compress at level 9; 6 is what the exporter uses, so the
# comparison is about rendering per scrape, not about the compression level.
GZIP_LEVEL = 6


class Replay:
    """A custom collector yielding fixed families (what a naive exporter's collect() returns)."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return iter(self._families)

    def describe(self) -> Iterable[Metric]:
        return ()


def registry_from_text(text: str) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Replay(list(text_string_to_metric_families(text))))
    return registry


def handler(registry: CollectorRegistry) -> Handler:
    async def metrics(request: web.Request) -> web.Response:
        body = generate_latest(registry)
        headers = {"Content-Type": CONTENT_TYPE}
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            body = gzip.compress(body, compresslevel=GZIP_LEVEL)
            headers["Content-Encoding"] = "gzip"
        return web.Response(body=body, headers=headers)

    return metrics


def static(body: bytes) -> Handler:
    async def serve(request: web.Request) -> web.Response:
        headers = {"Content-Type": CONTENT_TYPE, "Content-Encoding": "gzip"}
        return web.Response(body=body, headers=headers)

    return serve


async def _run(source: str, static_only: bool) -> None:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(source, headers={"Accept-Encoding": "gzip"}) as reply,
    ):
        reply.raise_for_status()
        gzipped = await reply.read()
    app = web.Application()
    if not static_only:  # parsing millions of series takes gigabytes: the floor only
        registry = registry_from_text(gzip.decompress(gzipped).decode())
        app.router.add_get("/metrics", handler(registry))
    app.router.add_get("/static", static(gzipped))
    await serve_until_signal(app)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.baseline_proc", description=__doc__)
    p.add_argument("--source", required=True, help="URL of the exporter's /metrics")
    p.add_argument("--static-only", action="store_true", help="serve /static only")
    args = p.parse_args(argv)
    asyncio.run(_run(args.source, args.static_only))


if __name__ == "__main__":
    main()
