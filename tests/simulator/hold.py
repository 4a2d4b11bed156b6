"""A gate in front of the simulator that holds one area's requests until released.

It proves "during" without a sleep: ``arrived()`` returns once the first request of the held
area reaches the simulator, and no such request is answered (faulty or not) before
``release()``. What a test does in between happens while that request is provably in flight.
A test that never releases has a platform that hangs for as long as it likes.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.typedefs import Handler

from exporter.simulator import SimRunner, Simulator
from exporter.simulator.http_common import area_for

# Long enough for any loaded machine to send a request; only a test that is broken waits so long.
ARRIVAL_SAFETY_SECONDS = 60.0


class Hold:
    """Holds requests of ``area`` between ``arm(area)`` and ``release()``."""

    def __init__(self) -> None:
        self.area: str | None = None
        self.held = 0  # requests of the area that arrived since arm()
        self.answered = 0  # of those, how many the simulator has answered
        self._arrived = asyncio.Event()
        self._open = asyncio.Event()
        self._open.set()

    def arm(self, area: str) -> None:
        self.area, self.held, self.answered = area, 0, 0
        self._arrived.clear()
        self._open.clear()

    def release(self) -> None:
        self.area = None
        self._open.set()

    async def arrived(self) -> None:
        """Returns once a request of the held area has reached the simulator."""
        await asyncio.wait_for(self._arrived.wait(), ARRIVAL_SAFETY_SECONDS)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.area is None or area_for(request.path) != self.area:
            return await handler(request)
        self.held += 1
        self._arrived.set()
        await self._open.wait()
        reply = await handler(request)
        self.answered += 1
        return reply


async def serve_held(sim: Simulator, hold: Hold) -> SimRunner:
    """Like ``exporter.simulator.serve`` on a free port of 127.0.0.1, with ``hold`` in front."""
    app = sim.build_app()
    app.middlewares.insert(0, hold.middleware)
    runner = SimRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner
