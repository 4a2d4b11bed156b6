"""Running the simulator on a real socket."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web

from exporter.simulator.simulator import Simulator


class SimRunner(web.AppRunner):
    """An AppRunner that knows the port it is bound to."""

    @property
    def port(self) -> int:
        for address in self.addresses:
            if isinstance(address, tuple) and len(address) >= 2:
                return int(address[1])
        raise RuntimeError("the simulator is not listening")

    @property
    def host(self) -> str:
        for address in self.addresses:
            if isinstance(address, tuple) and address:
                return str(address[0])
        raise RuntimeError("the simulator is not listening")

    @property
    def base_url(self) -> str:
        host = self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"


async def serve(sim: Simulator, host: str = "127.0.0.1", port: int = 0) -> SimRunner:
    """Serve `sim` on host:port (port 0 picks a free one: see `.port` / `.base_url`).

    Stop it with `await runner.cleanup()`.
    """
    runner = SimRunner(sim.build_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner


async def run_forever(
    sim: Simulator,
    host: str,
    port: int,
    ready: Callable[[SimRunner], None] | None = None,
) -> None:
    """Serve until cancelled (the `simulate` command); `ready` is called once listening."""
    runner = await serve(sim, host, port)
    try:
        if ready is not None:
            ready(runner)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` (or `[v6]:PORT`, or `:PORT` for all interfaces) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)
