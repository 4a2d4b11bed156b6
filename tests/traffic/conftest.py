"""Fixtures for traffic tests: a fake clock, a fake metrics source, a poller factory."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.exposition import Store
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.settings import TrafficSettings
from tests.rig.source import T0, FakeSource, MakePoller


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0 + 3600 + 5)  # 01:00:05 UTC


@pytest.fixture
def source(clock: FakeClock) -> FakeSource:
    return FakeSource(clock.time)


@pytest.fixture
def store(clock: FakeClock) -> Store:
    return Store(clock)


@pytest.fixture
def metrics() -> SelfMetrics:
    return SelfMetrics()


@pytest.fixture
def make_poller(
    source: FakeSource, store: Store, metrics: SelfMetrics, clock: FakeClock
) -> MakePoller:
    def make(**changes: Any) -> TrafficPoller:
        settings = TrafficSettings(**{"delay_seconds": 120, "revisit_minutes": 5, **changes})
        return TrafficPoller(source, store, metrics, clock, settings)

    return make
