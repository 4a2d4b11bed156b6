"""A per-account request limit of the simulated API, and the shapes its breaches come in."""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from aiohttp import web

from exporter.simulator.http_common import error

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

RATE_LIMIT_TEXT = "Rate limit exceeded"
# The live API's 200 body for a breach (shared upstream facts).
LIVE_RATE_LIMIT_BODY = {
    "status": "error",
    "message": RATE_LIMIT_TEXT,
    "description": "Request is forbidden",
}
_ACCOUNT_SEGMENT = {"restream": 4, "dvr": 4, "talking_head": 5}


def account_of(request: web.Request, area: str) -> str:
    """The account a request is about: `account=` of the metrics API, else its path segment."""
    if area == "traffic":
        return request.query.get("account", "")
    index = _ACCOUNT_SEGMENT.get(area)
    parts = request.path.split("/")
    return parts[index] if index is not None and len(parts) > index else ""


class RateLimiter:
    """At most `per_minute` requests per account in any 60 seconds (0 = no limit)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._sent: dict[str, deque[float]] = {}
        self.refused = 0

    def wait(self, account: str, now: float) -> float | None:
        """None when the request may go (it is counted), else seconds until a slot frees."""
        if self.per_minute <= 0:
            return None
        sent = self._sent.setdefault(account, deque())
        while sent and sent[0] <= now - 60:
            sent.popleft()
        if len(sent) >= self.per_minute:
            self.refused += 1
            return sent[0] + 60 - now
        sent.append(now)
        return None

    def reset(self) -> None:
        self._sent.clear()
        self.refused = 0


def breach_reply(sim: Simulator, area: str, wait: float) -> web.Response:
    """429 with Retry-After by default; 420 or the live API's HTTP 200 body with a quirk."""
    if sim.has_quirk("rate-limit-200"):
        return web.json_response(LIVE_RATE_LIMIT_BODY)
    if sim.has_quirk("rate-limit-420"):
        return web.json_response({"status": "error", "description": RATE_LIMIT_TEXT}, status=420)
    reply = error(area, 429, RATE_LIMIT_TEXT)
    reply.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return reply
