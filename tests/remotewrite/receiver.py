"""A remote-write receiver for tests: decodes each request, answers as it is told, and keeps
every request body and every accepted sample."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from exporter.remotewrite.wire import Series, decode


@dataclass
class Receiver:
    """``answers``: statuses (with bodies) for the next requests, then 204; a request holding
    a series ``bad`` accepts gets 400 (as Prometheus does for an invalid series)."""

    answers: list[tuple[int, str]] = field(default_factory=list)
    bad: Callable[[Series], bool] = lambda s: False
    bodies: list[bytes] = field(default_factory=list)
    stored: list[Series] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    async def write(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        if self.answers:
            status, text = self.answers.pop(0)
            return web.Response(status=status, text=text)
        series = decode(body)
        if any(self.bad(s) for s in series):
            return web.Response(status=400, text="invalid series")
        self.stored += series
        return web.Response(status=204)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/v1/write", self.write)
        return app
