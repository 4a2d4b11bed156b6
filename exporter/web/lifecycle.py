"""``POST /-/reload`` (with ``run --web.enable-lifecycle``), as Prometheus and its exporters
have it: re-read the config file now, 200 when it applied, 500 naming why it did not.

When the admin surface is on, the route takes its write token, so a reload is a change like
any other: in ``Authorization: Bearer <token>``, or in its own header ``X-Admin-Token: <token>``
when the web config's basic auth already takes ``Authorization`` (one header cannot carry
both). Without admin it is open, as Prometheus' is (put it behind the web config's basic auth
when the port is reachable by others). Without ``--web.enable-lifecycle`` it answers 403
"Lifecycle API is not enabled" as Prometheus does, naming the flag.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from aiohttp import web

from exporter.config import AdminSettings
from exporter.runtime.reload import Reloader
from exporter.web.auth import Role, authenticate, token_role
from exporter.web.ratelimit import FailureThrottle

RELOAD_PATH = "/-/reload"
ADMIN_TOKEN_HEADER = "X-Admin-Token"  # the write token beside basic auth's Authorization

log = structlog.get_logger("exporter.web.lifecycle")


def add_reload_route(
    app: web.Application,
    reloader: Reloader,
    current: Callable[[], AdminSettings],
    failures: FailureThrottle | None = None,
) -> None:
    """``current``: the admin settings in force (a reload may rotate the write token).
    ``failures``: the admin API's failed-authentication throttle, which a wrong token here
    counts toward and answers as the admin API does (429 with ``Retry-After``)."""

    async def reload(request: web.Request) -> web.Response:
        admin = current()
        if admin.enabled:
            own = request.headers.get(ADMIN_TOKEN_HEADER)
            presented = own if own is not None else request.headers.get("Authorization")
            role = _role(request, admin)
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
                    text=f"the write token is required to reload (Authorization: Bearer, or "
                    f"{ADMIN_TOKEN_HEADER} beside basic auth)\n",
                    headers={"WWW-Authenticate": "Bearer"} if status == 401 else None,
                )
        outcome = await reloader.reload()
        text = ("config reloaded: " if outcome.ok else "config not reloaded: ") + outcome.message
        return web.Response(status=200 if outcome.ok else 500, text=text + "\n")

    app.router.add_post(RELOAD_PATH, reload)


# Prometheus' answer, and the flag that turns the route on
LIFECYCLE_OFF = "Lifecycle API is not enabled: start with --web.enable-lifecycle.\n"


def add_lifecycle_off_route(app: web.Application) -> None:
    """Without ``--web.enable-lifecycle``: ``POST /-/reload`` answers 403 naming why, as
    Prometheus does, rather than a bare 404."""

    async def off(_: web.Request) -> web.Response:
        return web.Response(status=403, text=LIFECYCLE_OFF)

    app.router.add_post(RELOAD_PATH, off)


def _role(request: web.Request, admin: AdminSettings) -> Role | None:
    """The caller's admin role: from ``X-Admin-Token`` when sent, else ``Authorization``."""
    own = request.headers.get(ADMIN_TOKEN_HEADER)
    if own is not None:
        return token_role(own, admin.read_token, admin.write_token)
    return authenticate(request.headers.get("Authorization"), admin.read_token, admin.write_token)
