"""The exporter's aiohttp application: /metrics, /healthz, /readyz, landing page, admin API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from exporter.runtime.context import AREAS_POLLED, Context
from exporter.web.admin import admin_app
from exporter.web.landing import landing_handler
from exporter.web.webauth import apply_web_config, authenticated
from exporter.web.webconfig import WebConfig

CTX: web.AppKey[Context] = web.AppKey("ctx", Context)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _accepts_gzip(request: web.Request) -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "").lower()


async def metrics(request: web.Request) -> web.Response:
    """Serve the pre-rendered exposition; no rendering happens at scrape time."""
    exposition = request.app[CTX].store.exposition
    headers = {"Content-Type": CONTENT_TYPE, "Vary": "Accept-Encoding"}
    if _accepts_gzip(request):
        headers["Content-Encoding"] = "gzip"
        return web.Response(body=exposition.gzipped, headers=headers)
    # Only the gzip body is kept; decompressing megabytes must not stall the loop.
    plain = await asyncio.to_thread(lambda: exposition.plain)
    return web.Response(body=plain, headers=headers)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def readiness(ctx: Context) -> tuple[bool, dict[str, Any]]:
    """Ready once every enabled area has polled every account once and one poll succeeded."""
    pending: list[str] = []
    healthy = 0
    for account in ctx.accounts:
        for area in AREAS_POLLED:
            if not ctx.area_enabled(area):
                continue
            state = ctx.runner.healthy(area, account)
            if state is None:
                pending.append(f"{area}/{account}")
            elif state:
                healthy += 1
    ready = bool(ctx.accounts) and not pending and healthy > 0
    detail = {
        "ready": ready,
        "accounts": list(ctx.accounts),
        "pending_first_poll": pending,
        "healthy_polls": healthy,
    }
    if not ctx.accounts:
        detail["reason"] = "no accounts yet (discovery pending or none configured for this shard)"
    elif pending:
        detail["reason"] = "first poll not done everywhere"
    elif not healthy:
        detail["reason"] = "upstream not reachable: no poll has succeeded"
    return ready, detail


async def readyz(request: web.Request) -> web.Response:
    ready, detail = readiness(request.app[CTX])
    if not authenticated(request):  # an open probe: the verdict, not the account names
        detail = {"ready": ready}
    return web.json_response(detail, status=200 if ready else 503, dumps=json.dumps)


def init_app(ctx: Context, web_config: WebConfig | None = None) -> web.Application:
    """Build the web application around a ready Context (lifecycle: exporter.runtime.service);
    ``web_config`` adds basic auth and headers (its TLS context is the listener's)."""
    app = web.Application()
    app[CTX] = ctx
    if web_config is not None:
        apply_web_config(app, web_config)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/", landing_handler(ctx))
    if ctx.settings.admin.enabled:
        app.add_subapp("/api/v1", admin_app(ctx))
    return app
