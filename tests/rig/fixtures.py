"""Fixtures for the unit tests: a fake platform on a real aiohttp server and a client for it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from exporter.config import UpstreamSettings
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient
from tests.rig.scripted import FakePlatform


@dataclass
class Rig:
    """One client wired to the fake platform, with the clock and metrics it uses."""

    platform: FakePlatform
    client: UpstreamClient
    ops: Operations
    metrics: SelfMetrics
    clock: FakeClock
    redactor: Redactor

    def sample(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)


MakeRig = Callable[..., Rig]


@pytest.fixture
async def platform(aiohttp_server: Callable[..., Awaitable[Any]]) -> FakePlatform:
    fake = FakePlatform()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    return fake


@pytest.fixture
async def make_rig(platform: FakePlatform) -> AsyncIterator[MakeRig]:
    """``make_rig(token=...)`` or ``make_rig(username=..., password=...)``; extra keyword
    arguments go to UpstreamSettings, ``retries`` and ``timer`` (its latency clock) to the
    client."""
    sessions: list[aiohttp.ClientSession] = []

    def make(
        retries: int = 2,
        base_url: str | None = None,
        timer: Callable[[], float] = time.perf_counter,
        **upstream: Any,
    ) -> Rig:
        if "token" not in upstream and "username" not in upstream:
            upstream["token"] = "static-token-abc"
        settings = UpstreamSettings(base_url=base_url or platform.url, **upstream)
        session = aiohttp.ClientSession()
        sessions.append(session)
        metrics, clock, redactor = SelfMetrics(), FakeClock(), Redactor()
        client = UpstreamClient(
            session,
            settings,
            metrics=metrics,
            clock=clock,
            redactor=redactor,
            retries=retries,
            backoff_seconds=0.01,
            timer=timer,
        )
        return Rig(platform, client, Operations(client), metrics, clock, redactor)

    yield make
    for session in sessions:
        await session.close()
