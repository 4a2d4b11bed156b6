"""Fixtures for the platform-shape tests: the simulator on a real socket and a client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from exporter.clock import FakeClock
from exporter.config import UpstreamSettings
from exporter.logs import Redactor
from exporter.polling import PollRunner
from exporter.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.simulator.requests_log import RecordedRequest
from exporter.upstream import UpstreamClient

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z
TOKEN_PATH = "/app/oauth/v1/token/"
DVR_MAIN = "/app/dvr-net/v1/demo-media/streams/live/main"
ServerFactory = Callable[..., Awaitable[TestServer]]


@dataclass
class ShapeRig:
    """One UpstreamClient talking HTTP to one Simulator, both on the same FakeClock."""

    sim: Simulator
    clock: FakeClock
    client: UpstreamClient
    metrics: SelfMetrics
    runner: PollRunner

    def sample(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)

    def logins(self) -> list[RecordedRequest]:
        return self.sim.requests.find(method="POST", path=TOKEN_PATH)

    def sent(self, path: str) -> list[RecordedRequest]:
        return self.sim.requests.find(path=path)


MakeShapeRig = Callable[..., Awaitable[ShapeRig]]


@pytest.fixture
async def make_rig(aiohttp_server: ServerFactory) -> AsyncIterator[MakeShapeRig]:
    """``await make_rig(quirks=[...], login=True, upstream={...}, **SimConfig changes)``."""
    sessions: list[aiohttp.ClientSession] = []

    async def make(
        quirks: tuple[str, ...] | list[str] = (),
        login: bool = True,
        upstream: dict[str, Any] | None = None,
        **changes: Any,
    ) -> ShapeRig:
        clock = FakeClock(T0)
        sim = Simulator(SimConfig(quirks=frozenset(quirks), **changes), clock)
        server = await aiohttp_server(sim.build_app(), host="127.0.0.1")
        auth = (
            {"username": sim.config.username, "password": sim.config.password}
            if login
            else {"token": sim.token}
        )
        settings = UpstreamSettings(
            base_url=str(server.make_url("")).rstrip("/"), **{**auth, **(upstream or {})}
        )
        session = aiohttp.ClientSession()
        sessions.append(session)
        metrics = SelfMetrics()
        client = UpstreamClient(
            session, settings, metrics, clock, Redactor(), retries=1, backoff_seconds=0.0
        )
        return ShapeRig(sim, clock, client, metrics, PollRunner(metrics, clock))

    yield make
    for session in sessions:
        await session.close()
