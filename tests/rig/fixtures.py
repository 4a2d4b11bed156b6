"""The rig's fixtures (plugins of tests/conftest.py): a client against the scripted platform
(``platform``, ``make_rig``) or against the simulator (``make_sim_rig``), and the whole daemon
(``start_daemon``)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import pytest

from exporter.config import Settings, UpstreamSettings
from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from tests.rig.client import (
    T0,
    MakeRig,
    MakeShapeRig,
    Rig,
    ServerFactory,
    ShapeRig,
    connect,
    server_url,
)
from tests.rig.daemon import Daemon, StartDaemon, running
from tests.rig.scripted import FakePlatform


@pytest.fixture
async def rig_sessions() -> AsyncIterator[list[aiohttp.ClientSession]]:
    """The client rig_sessions a rig opened, closed at the end of the test."""
    opened: list[aiohttp.ClientSession] = []
    yield opened
    for session in opened:
        await session.close()


@pytest.fixture
async def platform(aiohttp_server: ServerFactory) -> FakePlatform:
    fake = FakePlatform()
    fake.url = server_url(await aiohttp_server(fake.app()))
    return fake


@pytest.fixture
async def make_rig(platform: FakePlatform, rig_sessions: list[aiohttp.ClientSession]) -> MakeRig:
    """``make_rig(token=...)`` or ``make_rig(username=..., password=...)``; extra keyword
    arguments go to UpstreamSettings, ``retries`` and ``timer`` (its latency clock) to the
    client."""

    def make(
        retries: int = 2,
        base_url: str | None = None,
        timer: Callable[[], float] = time.perf_counter,
        **upstream: Any,
    ) -> Rig:
        if "token" not in upstream and "username" not in upstream:
            upstream["token"] = "static-token-abc"
        settings = UpstreamSettings(base_url=base_url or platform.url, **upstream)
        rig_sessions.append(aiohttp.ClientSession())
        parts = connect(
            rig_sessions[-1],
            settings,
            FakeClock(),
            retries=retries,
            backoff_seconds=0.01,
            timer=timer,
        )
        return Rig(**vars(parts), platform=platform)

    return make


@pytest.fixture
async def make_sim_rig(
    aiohttp_server: ServerFactory, rig_sessions: list[aiohttp.ClientSession]
) -> MakeShapeRig:
    """``await make_sim_rig(quirks=[...], login=True, upstream={...}, **SimConfig changes)``."""

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
        settings = UpstreamSettings(base_url=server_url(server), **{**auth, **(upstream or {})})
        rig_sessions.append(aiohttp.ClientSession())
        parts = connect(rig_sessions[-1], settings, clock, retries=1, backoff_seconds=0.0)
        return ShapeRig(**vars(parts), sim=sim)

    return make


@pytest.fixture
async def start_daemon() -> AsyncIterator[StartDaemon]:
    """``await start_daemon(settings, clock, **running's keywords)``: a daemon started by
    ``tests.rig.daemon.running``, stopped when the test ends (the last started first)."""
    async with AsyncExitStack() as stack:

        async def start(settings: Settings, *args: Any, **kwargs: Any) -> Daemon:
            return await stack.enter_async_context(running(settings, *args, **kwargs))

        yield start
