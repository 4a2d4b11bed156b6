"""The client side of the rig: one real ``UpstreamClient`` wired to one platform over HTTP.

``connect`` builds the client as the daemon does (settings, metrics, clock, redactor) and
returns its parts; ``Rig`` holds them beside the scripted platform (tests/rig/scripted.py),
``ShapeRig`` beside the simulator (exporter/simulator), both on the same ``FakeClock``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from exporter.config import UpstreamSettings
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import Simulator
from exporter.simulator.requests_log import RecordedRequest
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient
from tests.rig.scripted import FakePlatform

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z
TOKEN_PATH = "/app/oauth/v1/token/"
DVR_MAIN = "/app/dvr-net/v1/demo-media/streams/live/main"
ServerFactory = Callable[..., Awaitable[TestServer]]


@dataclass
class ClientParts:
    """An UpstreamClient under test and what it reports to: metrics, clock, redactor."""

    client: UpstreamClient
    ops: Operations
    metrics: SelfMetrics
    clock: FakeClock
    redactor: Redactor
    runner: PollRunner

    def sample(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)


def connect(
    session: aiohttp.ClientSession,
    settings: UpstreamSettings,
    clock: FakeClock,
    *,
    metrics: SelfMetrics | None = None,
    redactor: Redactor | None = None,
    **client: Any,
) -> ClientParts:
    """The client as the daemon builds it; ``client`` goes to UpstreamClient (retries,
    backoff_seconds, timer)."""
    metrics = metrics or SelfMetrics()
    redactor = redactor or Redactor()
    upstream = UpstreamClient(session, settings, metrics, clock, redactor, **client)
    return ClientParts(
        upstream, Operations(upstream), metrics, clock, redactor, PollRunner(metrics, clock)
    )


def server_url(server: TestServer) -> str:
    """The URL a client is given for a test server (no trailing slash)."""
    return str(server.make_url("")).rstrip("/")


@dataclass
class Rig(ClientParts):
    """One client wired to the scripted platform, with the clock and metrics it uses."""

    platform: FakePlatform


@dataclass
class ShapeRig(ClientParts):
    """One UpstreamClient talking HTTP to one Simulator, both on the same FakeClock."""

    sim: Simulator

    def logins(self) -> list[RecordedRequest]:
        return self.sim.requests.find(method="POST", path=TOKEN_PATH)

    def sent(self, path: str) -> list[RecordedRequest]:
        return self.sim.requests.find(path=path)


MakeRig = Callable[..., Rig]
MakeShapeRig = Callable[..., Awaitable[ShapeRig]]
