"""Fixtures for the simulator tests: a fake clock at 2026-01-01T17:00:30Z and a client."""

from __future__ import annotations

import pytest

from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, TOKEN, Client, ClientFactory


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0 + 30)


@pytest.fixture
def sim(clock: FakeClock) -> Simulator:
    return Simulator(SimConfig(), clock)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, sim: Simulator) -> Client:
    """A client that sends the static token."""
    return await aiohttp_client(sim.build_app(), headers=TOKEN)


@pytest.fixture
async def anon(aiohttp_client: ClientFactory, sim: Simulator) -> Client:
    """A client without any token."""
    return await aiohttp_client(sim.build_app())
