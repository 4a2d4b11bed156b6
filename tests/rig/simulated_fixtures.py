"""Fixtures for the platform-shape tests (the rig itself is in shapes_rig.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from exporter.config import UpstreamSettings
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.upstream import UpstreamClient
from tests.rig.client import T0, MakeShapeRig, ServerFactory, ShapeRig


@pytest.fixture
async def make_sim_rig(aiohttp_server: ServerFactory) -> AsyncIterator[MakeShapeRig]:
    """``await make_sim_rig(quirks=[...], login=True, upstream={...}, **SimConfig changes)``."""
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
