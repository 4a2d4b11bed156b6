"""A gate in front of the simulator that holds one area's requests until released.

It proves "during" without a sleep: ``arrived`` is set when the first request of the held area
reaches the simulator, and no such request is answered (faulty or not) before ``release()``.
What a test does in between happens while that request is provably in flight.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.typedefs import Handler

from exporter.simulator.http_common import area_for

# Long enough for any loaded machine to send a request; only a test that is broken waits so long.
ARRIVAL_SAFETY_SECONDS = 60.0


class Hold:
    """Holds requests of ``area`` between ``arm(area)`` and ``release()``."""

    def __init__(self) -> None:
        self.area: str | None = None
        self.held = 0  # requests held since arm()
        self._arrived = asyncio.Event()
        self._open = asyncio.Event()
        self._open.set()

    def arm(self, area: str) -> None:
        self.area, self.held = area, 0
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
        if self.area is not None and area_for(request.path) == self.area:
            self.held += 1
            self._arrived.set()
            await self._open.wait()
        return await handler(request)
