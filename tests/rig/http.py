"""The HTTP side every scripted platform of the rig shares: one aiohttp app with a catch-all
route, each request recorded as it arrives, counted in and out, optionally held until
``release()``; a subclass says only how it records a request and what it answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class FakeServer:
    hang: bool = False  # hold every request until release(): a platform that does not answer
    answered: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    url: str = ""
    on_arrival: Callable[[], None] | None = None  # called as each request arrives
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def release(self) -> None:
        """Let the held requests go on (call it before the server stops)."""
        self._released.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.record(request, body)
        if self.on_arrival is not None:
            self.on_arrival()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.hang:
                await self._released.wait()
            self.answered += 1
            return await self.answer(request, body)
        finally:
            self.in_flight -= 1

    def record(self, request: web.Request, body: bytes) -> None:
        raise NotImplementedError

    async def answer(self, request: web.Request, body: bytes) -> web.StreamResponse:
        raise NotImplementedError
