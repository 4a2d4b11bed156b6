"""The ``/api/v1`` admin surface: authenticated, validated pass-through to the platform."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from aiohttp import web

from exporter.context import Context
from exporter.talking_head_tasks import TaskTracker
from exporter.web.admin.core import GENERATE_PER_MINUTE, AdminState, Route, make_handler
from exporter.web.admin.openapi import build_openapi
from exporter.web.admin.ratelimit import WindowLimit
from exporter.web.admin.routes import ROUTES

__all__ = ["ADMIN_STATE", "ROUTES", "AdminState", "Route", "admin_app", "build_openapi"]

ADMIN_STATE = web.AppKey("admin_state", AdminState)


def admin_app(ctx: Context) -> web.Application:
    """The sub-application to mount at ``/api/v1`` (routes, ``/openapi.json``).

    The task tracker is shared through ``ctx.extras["task_tracker"]`` (created when missing);
    whoever owns the process runs its ``run()`` loop.
    """
    tracker = ctx.extras.get("task_tracker")
    if not isinstance(tracker, TaskTracker):
        tracker = TaskTracker(ctx)
        ctx.extras["task_tracker"] = tracker
    state = AdminState(WindowLimit(ctx.clock, GENERATE_PER_MINUTE, 60.0), tracker)
    app = web.Application()
    app[ADMIN_STATE] = state
    for route in ROUTES:
        app.router.add_route(route.method, route.path, make_handler(ctx, state, route))
    document = json.dumps(build_openapi(ROUTES), indent=1).encode()

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=document, content_type="application/json")

    app.router.add_get("/openapi.json", openapi)
    app.cleanup_ctx.append(_background_cleanup)
    return app


async def _background_cleanup(app: web.Application) -> AsyncIterator[None]:
    yield
    tasks = list(app[ADMIN_STATE].background)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
