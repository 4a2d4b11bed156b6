"""The listener: how long a client may take to send a request, and how many may be connected.

aiohttp alone holds a half-sent request open for its keep-alive time (75 s) and accepts any
number of connections. Here (``server`` settings):

- ``header_timeout_seconds``: a connection whose next request line and headers have not all
  arrived this long after it opened (or after the previous reply) is closed. aiohttp's
  keep-alive timer does exactly that: it starts when a connection opens and again after each
  reply, and partial headers do not restart it; an idle keep-alive connection closes then too.
  A TLS handshake gets as long.
- ``body_timeout_seconds``: a body not received this long after its headers is answered 408
  where a handler reads one (the admin API), and an unread one is drained at most this long.
- ``max_connections``: one more connection is answered ``503`` and closed before any request
  is read, so slow or idle clients cannot take every socket and all the memory.

``/metrics`` keeps answering meanwhile: a half-sent request costs a socket and a parser, no
task and no thread.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl
from collections.abc import Callable
from typing import Any

from aiohttp import web

from exporter.config import ServerSettings

REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
    b"Content-Length: 29\r\n"
    b"\r\n"
    b"503 too many open connections"
)


def runner_options(limits: ServerSettings) -> dict[str, Any]:
    """``web.AppRunner`` keyword arguments for ``limits`` (see the module docstring)."""
    return {
        "access_log": None,
        "keepalive_timeout": limits.header_timeout_seconds,
        "lingering_time": limits.body_timeout_seconds,
    }


class _Refuse(asyncio.Protocol):
    """A connection over the cap: told 503, then closed; nothing it sends is read."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(REFUSED)
        transport.close()


class GuardedSite(web.BaseSite):
    """A TCP site that refuses connections beyond ``limits.max_connections``; on ``sock`` when
    given (the daemon binds before it starts anything), else on ``host``:``port``."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        limits: ServerSettings,
        ssl_context: ssl.SSLContext | None = None,
        sock: socket.socket | None = None,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._port = port
        self._limits = limits
        self._sock = sock

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        host = f"[{self._host}]" if ":" in self._host else self._host or "0.0.0.0"
        return f"{scheme}://{host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        cap = self._limits.max_connections

        def protocol() -> asyncio.BaseProtocol:
            return _Refuse() if len(server.connections) >= cap else server()

        handshake = self._limits.header_timeout_seconds if self._ssl_context else None
        loop = asyncio.get_running_loop()
        if self._sock is not None:
            self._server = await loop.create_server(
                protocol, sock=self._sock, ssl=self._ssl_context, ssl_handshake_timeout=handshake
            )
        else:
            self._server = await loop.create_server(
                protocol,
                self._host or None,
                self._port,
                ssl=self._ssl_context,
                ssl_handshake_timeout=handshake,
                reuse_address=True,
            )


async def serve(
    app: web.Application,
    host: str,
    port: int,
    limits: ServerSettings,
    ssl_context: ssl.SSLContext | None = None,
    shutdown_timeout: float = 3.0,
    sock: socket.socket | None = None,
) -> tuple[web.AppRunner, int]:
    """Start serving ``app``; returns the runner (to clean up) and the port bound."""
    runner = web.AppRunner(app, shutdown_timeout=shutdown_timeout, **runner_options(limits))
    await runner.setup()
    await GuardedSite(runner, host, port, limits, ssl_context, sock).start()
    return runner, int(runner.addresses[0][1])  # the real port when 0 was asked for


async def wait_for_stop(on_hup: Callable[[], None] | None = None) -> None:
    """Until SIGINT or SIGTERM; SIGHUP calls ``on_hup`` when given."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if on_hup is not None:
        loop.add_signal_handler(signal.SIGHUP, on_hup)
    await stop.wait()
