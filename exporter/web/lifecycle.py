"""``POST /-/reload`` (with ``run --web.enable-lifecycle``), as Prometheus and its exporters
have it: re-read the config file now, 200 when it applied, 500 naming why it did not.

When the admin surface is on, the route takes its write token (``Authorization: Bearer``),
so a reload is a change like any other; without admin it is open, as Prometheus' is (put it
behind the web config's basic auth when the port is reachable by others).
"""

from __future__ import annotations

import structlog
from aiohttp import web

from exporter.config import AdminSettings
from exporter.runtime.reload import Reloader
from exporter.web.admin.core import authenticate
from exporter.web.admin.ratelimit import FailureThrottle

RELOAD_PATH = "/-/reload"

log = structlog.get_logger("exporter.web.lifecycle")


def add_reload_route(
    app: web.Application,
    reloader: Reloader,
    admin: AdminSettings,
    failures: FailureThrottle | None = None,
) -> None:
    """``failures``: the admin API's failed-authentication throttle, which a wrong token here
    counts toward and answers as the admin API does (429 with ``Retry-After``)."""

    async def reload(request: web.Request) -> web.Response:
        if admin.enabled:
            presented = request.headers.get("Authorization")
            role = authenticate(presented, admin.read_token, admin.write_token)
            if role is None and failures is not None:
                wait = failures.failed(request.remote, request.headers, presented)
                if wait:
                    return web.Response(
                        status=429,
                        text=failures.message(wait) + "\n",
                        headers={"Retry-After": str(wait)},
                    )
            if role != "write":
                status = 401 if role is None else 403
                return web.Response(
                    status=status,
                    text="the write token is required to reload\n",
                    headers={"WWW-Authenticate": "Bearer"} if status == 401 else None,
                )
        outcome = await reloader.reload()
        text = ("config reloaded: " if outcome.ok else "config not reloaded: ") + outcome.message
        return web.Response(status=200 if outcome.ok else 500, text=text + "\n")

    app.router.add_post(RELOAD_PATH, reload)
