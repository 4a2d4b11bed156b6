"""The ``/api/v1`` admin surface: authenticated, validated pass-through to the platform."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractRoute

from exporter.config import Settings
from exporter.config.rules import GENERATE_PER_MINUTE
from exporter.runtime.context import Context
from exporter.web.admin.core import AdminDeps, AdminState, Rejected, Route
from exporter.web.admin.gate import gate, throttled
from exporter.web.admin.handlers import passthrough
from exporter.web.admin.openapi import build_openapi
from exporter.web.admin.readbudget import ReadBudget, state_path
from exporter.web.admin.routes import ROUTES
from exporter.web.auth import authenticate
from exporter.web.masking import secret_mask
from exporter.web.ratelimit import FailureThrottle, WindowLimit
from exporter.web.webauth import authenticated

__all__ = [
    "ADMIN_STATE",
    "ROUTES",
    "AdminDeps",
    "AdminState",
    "Route",
    "admin_app",
    "build_openapi",
]

ADMIN_STATE = web.AppKey("admin_state", AdminState)


def generate_share(replicas_per_shard: int) -> int:
    """Generate requests a minute one replica allows, so that all copies together stay within
    the platform's limit (a caller may see 429 before the account's 10 are used up)."""
    return max(1, GENERATE_PER_MINUTE // replicas_per_shard)


def reads_share(settings: Settings) -> int:
    """Talking-head reads a day one replica allows: ``admin.talking_head_reads_per_day`` is
    the account's, shared by the ``admin.replicas_per_shard`` copies that serve it (as the
    generate limit is), so two replicas do not spend it twice."""
    per_day = settings.admin.talking_head_reads_per_day
    return per_day // settings.admin.replicas_per_shard if per_day else 0


def admin_app(ctx: Context, deps: AdminDeps) -> web.Application:
    """The sub-application to mount at ``/api/v1`` (routes, ``/openapi.json``).

    ``deps.tracker`` is followed by whoever built it (the Service runs its loop); the app
    only hands it the tasks it submits.
    """
    settings = ctx.settings
    replicas = settings.admin.replicas_per_shard
    masks = secret_mask(settings)
    failures = settings.admin.auth_failures_per_minute
    proxy_header = settings.admin.trusted_proxy_header
    auth_failures = FailureThrottle(ctx.clock, failures, proxy_header) if failures else None
    state = AdminState(
        WindowLimit(ctx.clock, generate_share(settings.admin.replicas_per_shard), 60.0),
        deps,
        masks,
        auth_failures,
        ReadBudget(ctx.clock, reads_share(settings), state_path(settings)),
        WindowLimit(ctx.clock, settings.admin.reads_per_minute // replicas, 60.0),
    )
    operations: dict[AbstractRoute, Route] = {}
    app = web.Application(middlewares=gate(ctx, state, operations))
    app[ADMIN_STATE] = state
    for route in ROUTES:
        handler = route.handler or passthrough
        operations[app.router.add_route(route.method, route.path, handler)] = route
    documents: dict[tuple[str, ...], bytes] = {}

    async def openapi(request: web.Request) -> web.Response:
        # It names the accounts: with basic auth on, a password or a token is needed.
        presented = request.headers.get("Authorization")
        if not authenticated(request) and not authenticate(
            presented, ctx.settings.admin.read_token, ctx.settings.admin.write_token
        ):  # the tokens in force: a reload may have rotated them
            if auth_failures is not None:
                wait = auth_failures.failed(request.remote, request.headers, presented)
                if wait:
                    return throttled(auth_failures, wait).response()
            return Rejected(
                401,
                "unauthorized",
                "send a password (basic auth) or Authorization: Bearer <read or write token>",
                headers={"WWW-Authenticate": 'Bearer realm="cdnvideo-exporter"'},
            ).response()
        # The account enum is the accounts served now (discovery may change them).
        accounts = tuple(ctx.accounts)
        if accounts not in documents:
            documents.clear()
            documents[accounts] = json.dumps(build_openapi(ROUTES, accounts), indent=1).encode()
        return web.Response(body=documents[accounts], content_type="application/json")

    app.router.add_get("/openapi.json", openapi)
    app.cleanup_ctx.append(_background_cleanup)
    return app


async def _background_cleanup(app: web.Application) -> AsyncIterator[None]:
    yield
    tasks = list(app[ADMIN_STATE].background)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
