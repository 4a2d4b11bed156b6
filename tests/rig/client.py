"""The platform-shape tests' rig: the simulator on a real socket and a client for it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp.test_utils import TestServer

from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import Simulator
from exporter.simulator.requests_log import RecordedRequest
from exporter.support.clock import FakeClock
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
