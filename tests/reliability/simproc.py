"""The simulator in a process of its own, on a clock the tests move through ``/_sim/clock``.

    python tests/reliability/simproc.py --start 1767286805 [--clock-file F] [simulator flags]

Prints ``listening http://127.0.0.1:PORT`` once serving, and stops on SIGTERM/SIGINT.

Without ``--clock-file`` the clock is a FakeClock that only moves when told. With it, the
clock is real time plus an offset kept in that 8-byte file: ``/_sim/clock`` changes the
offset, and an exporter process started with ``shifted_clock/`` on its PYTHONPATH (its
``sitecustomize`` adds the same offset to ``time.time``) lives on exactly the same clock.

Extra control route, for resources that come and go: ``POST /_simproc/resources`` with
``{"account": ..., "hidden": [resource ids]}`` leaves those resources out of the
per-resource metrics replies from then on (account totals still include them).
"""

from __future__ import annotations

import argparse
import asyncio
import mmap
import signal
import struct
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from exporter.simulator import Simulator, add_cli_arguments, config_from_args
from exporter.simulator.traffic_window import TrafficReader
from exporter.support.clock import FakeClock


class SharedClock(FakeClock):
    """Real time plus an offset that lives in a file other processes map too."""

    def __init__(self, path: str, start: float) -> None:
        super().__init__(start)
        Path(path).write_bytes(struct.pack("d", start - time.time()))
        with open(path, "r+b") as fh:
            self._map = mmap.mmap(fh.fileno(), 8)

    @property
    def offset(self) -> float:
        return float(struct.unpack("d", self._map[:8])[0])

    def time(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._map[:8] = struct.pack("d", self.offset + seconds)

    def set(self, now: float) -> None:
        self._map[:8] = struct.pack("d", now - time.time())


def hide_resources(sim: Simulator) -> dict[str, set[str]]:
    """Wrap each account's per-resource reader so hidden resources are left out."""
    hidden: dict[str, set[str]] = {account: set() for account in sim.accounts}
    for account in sim.accounts:
        reader = sim.traffic_reader(account)
        assert isinstance(reader, TrafficReader)
        original = reader.per_resource
        gone = hidden[account]

        def per_resource(*args: Any, _orig: Any = original, _gone: set[str] = gone) -> Any:
            return [(res, v) for res, v in _orig(*args) if res.id not in _gone]

        reader.per_resource = per_resource  # type: ignore[method-assign]  # test double
    return hidden


def build_app(sim: Simulator, hidden: dict[str, set[str]]) -> web.Application:
    app = sim.build_app()

    async def set_hidden(request: web.Request) -> web.Response:
        body = await request.json()
        hidden[body["account"]].clear()
        hidden[body["account"]].update(str(r) for r in body["hidden"])
        return web.json_response({a: sorted(h) for a, h in hidden.items()})

    app.router.add_post("/_simproc/resources", set_hidden)
    return app


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--start", type=float, required=True, help="fake Unix time to start at")
    parser.add_argument("--clock-file", help="share the clock through this file")
    add_cli_arguments(parser)
    args = parser.parse_args(argv)
    clock = SharedClock(args.clock_file, args.start) if args.clock_file else FakeClock(args.start)
    sim = Simulator(config_from_args(args), clock)
    runner = web.AppRunner(build_app(sim, hide_resources(sim)), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"listening http://127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
