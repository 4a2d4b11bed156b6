"""Slow clients against the real listener (``exporter.web.serving``, as ``run`` serves it and
the rig's ``start_daemon`` too): half-sent requests are closed after the header timeout, a
trickled body gets 408, open connections are capped, and ``/metrics`` answers while half-sent
requests are held open (issue 26, point 6)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from tests.rig.daemon import Daemon, StartDaemon

WRITE_TOKEN = "slow-clients-write-token-0123"
HALF_SENT = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "  # headers never end


@dataclass
class Served:
    daemon: Daemon

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.daemon.runner.addresses[0][1])

    async def half_sent(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await self.connect()
        writer.write(HALF_SENT)
        await writer.drain()
        return reader, writer

    async def exchange(self, request: bytes) -> bytes:
        """Send ``request`` on a new connection; everything answered until the server closes."""
        reader, writer = await self.connect()
        try:
            writer.write(request)
            await writer.drain()
            return await asyncio.wait_for(reader.read(), timeout=30)
        finally:
            writer.close()

    async def metrics(self) -> bytes:
        return await self.exchange(
            b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )


Start = Callable[..., Awaitable[Served]]


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (the server's side of a socket event)."""
    for _ in range(3000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


@pytest.fixture
async def start(start_daemon: StartDaemon) -> AsyncIterator[Start]:
    runners: list[web.AppRunner] = []

    async def _start(**server: Any) -> Served:
        clock = FakeClock()
        sim = Simulator(SimConfig(), clock)
        sim_runner = await serve(sim)
        runners.append(sim_runner)
        settings = parse_config(
            {
                "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
                "accounts": ["demo-media"],
                "admin": {"enabled": True, "write_token": WRITE_TOKEN},
                "server": server,
            },
            env={},
        )
        return Served(await start_daemon(settings, clock))

    yield _start
    for runner in reversed(runners):
        await runner.cleanup()


async def test_a_half_sent_request_is_closed_after_the_header_timeout(start: Start) -> None:
    served = await start(header_timeout_seconds=0.2)
    reader, writer = await served.half_sent()
    try:
        # Closed by the server, unanswered (aiohttp alone would hold it 75 s).
        assert await asyncio.wait_for(reader.read(), timeout=30) == b""
    finally:
        writer.close()


async def test_metrics_answers_while_half_sent_requests_are_held_open(start: Start) -> None:
    served = await start(header_timeout_seconds=30)
    slow = [await served.half_sent() for _ in range(100)]
    try:
        reply = await served.metrics()
        assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"cdnvideo_exporter_build_info{" in reply
        assert not any(reader.at_eof() for reader, _ in slow)  # all still open, still waiting
    finally:
        for _, writer in slow:
            writer.close()


async def test_connections_beyond_the_cap_are_answered_503(start: Start) -> None:
    served = await start(max_connections=5, header_timeout_seconds=30)
    slow = [await served.half_sent() for _ in range(5)]
    server = served.daemon.runner.server
    assert server is not None
    await until(lambda: len(server.connections) == 5)  # the server has taken all five
    refused = await served.metrics()
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert refused.endswith(b"503 too many open connections")
    for _, writer in slow:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    await until(lambda: not server.connections)  # the server has seen them go
    assert (await served.metrics()).startswith(b"HTTP/1.1 200 OK\r\n")


async def test_a_trickled_body_gets_408_after_the_body_timeout(start: Start) -> None:
    served = await start(body_timeout_seconds=0.2)
    head = (
        "POST /api/v1/talking-head/demo-media/generate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {WRITE_TOKEN}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    )
    reply = await served.exchange(head.encode() + b'{"script": ')  # 89 bytes never come
    status, _, rest = reply.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout"
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert body["error"] == "body_timeout"
    assert "server.body_timeout_seconds" in body["message"]
