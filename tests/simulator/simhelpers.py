"""Constants and small helpers shared by the simulator tests."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp.test_utils import TestClient

T0 = 1_767_225_600 + 17 * 3600  # 2026-01-01T17:00:00Z; the fake clock starts 30 s later
TOKEN = {"CDN-AUTH-TOKEN": "demo-token"}
ClientFactory = Callable[..., Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]


def iso(ts: float, z: str = "") -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + z
