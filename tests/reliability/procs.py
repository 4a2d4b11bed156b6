"""Real processes for the restart tests: the simulator (simproc.py) and ``python -m exporter``."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from exporter.traffic.parse import COUNT_KEYS

from .leaks import LeakGuard
from .rig import Samples, parse

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(clock_file: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDNVIDEO_")}
    paths = [str(ROOT)] + ([str(HERE / "shifted_clock")] if clock_file else [])
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if clock_file:
        env["RELIABILITY_CLOCK_FILE"] = str(clock_file)
    return env


@dataclass
class SimProcess:
    """simproc.py serving the simulator; control through its /_sim/ routes."""

    proc: subprocess.Popen[str]
    url: str
    http: aiohttp.ClientSession = field(default_factory=aiohttp.ClientSession)

    @classmethod
    async def start(
        cls, start: float, args: Iterable[str], clock_file: Path | None = None
    ) -> SimProcess:
        cmd = [PYTHON, str(HERE / "simproc.py"), "--start", str(start), *args]
        if clock_file:
            cmd += ["--clock-file", str(clock_file)]
        proc = await asyncio.to_thread(
            subprocess.Popen, cmd, stdout=subprocess.PIPE, text=True, env=child_env(), cwd=ROOT
        )
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout=30)
        assert line.startswith("listening "), line
        return cls(proc, line.split()[1])

    async def call(self, method: str, path: str, body: Any = None, **query: str) -> Any:
        async with self.http.request(method, self.url + path, json=body, params=query) as resp:
            assert resp.status < 300, (path, resp.status, await resp.text())
            return await resp.json()

    async def now(self) -> float:
        return float((await self.call("GET", "/_sim/clock"))["now"])

    async def advance(self, seconds: float) -> float:
        return float((await self.call("POST", "/_sim/clock", {"advance": seconds}))["now"])

    async def set_clock(self, now: float) -> None:
        await self.call("POST", "/_sim/clock", {"set": now})

    async def fault(self, area: str, kind: str, **extra: Any) -> None:
        await self.call("POST", "/_sim/faults", {"area": area, "kind": kind, **extra})

    async def clear_faults(self) -> None:
        await self.call("DELETE", "/_sim/faults")

    async def requests(self, area: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = await self.call("GET", "/_sim/requests", area=area)
        return found

    async def truth(
        self, account: str, minutes: range, resource: str | None = None
    ) -> dict[str, float]:
        """Final figures summed over ``minutes``, fetched from ``GET /_sim/traffic``."""
        extra = {"resource": resource} if resource else {}
        finals = await asyncio.gather(
            *(
                self.call("GET", "/_sim/traffic", account=account, minute=str(m), **extra)
                for m in minutes
            )
        )
        return {k: float(sum(f[k] for f in finals)) for k in COUNT_KEYS}

    async def stop(self) -> None:
        await self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, 10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait)


@dataclass
class ExporterProcess:
    """``python -m exporter run --config`` on the simulator's shared clock."""

    proc: subprocess.Popen[bytes]
    url: str
    log_path: Path
    guard: LeakGuard
    http: aiohttp.ClientSession = field(default_factory=aiohttp.ClientSession)

    @classmethod
    async def start(
        cls, config: Path, listen: str, log_path: Path, clock_file: Path, guard: LeakGuard
    ) -> ExporterProcess:
        def spawn() -> subprocess.Popen[bytes]:
            with log_path.open("ab") as log:
                return subprocess.Popen(
                    [PYTHON, "-m", "exporter", "run", "--config", str(config)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=child_env(clock_file),
                    cwd=ROOT,
                )

        me = cls(await asyncio.to_thread(spawn), f"http://{listen}", log_path, guard)
        await me.wait_for(lambda: me.get("/healthz"), "healthz")
        return me

    async def get(self, path: str) -> tuple[int, str]:
        async with self.http.get(self.url + path) as resp:
            body = await resp.text()
            self.guard.add(f"process GET {path}", body)
            return resp.status, body

    async def scrape(self) -> Samples:
        status, body = await self.get("/metrics")
        assert status == 200
        return parse(body)

    async def wait_for(
        self, probe: Any, what: str, within: float = 30.0, every: float = 0.1
    ) -> Any:
        """Poll ``probe`` (a coroutine function) every ``every`` seconds until it returns
        something truthy (a probe that scrapes asks less often: each scrape costs both sides
        a render and a parse)."""
        deadline = time.monotonic() + within
        while True:
            code = self.proc.poll()
            assert code is None, f"exporter exited ({code}): {self.log()[-2000:]}"
            try:
                got = await probe()
            except (aiohttp.ClientError, OSError):
                got = None
            if got and (not isinstance(got, tuple) or got[0] == 200):
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: {self.log()[-2000:]}")
            await asyncio.sleep(every)

    async def window_end(self, account: str) -> float | None:
        samples = await self.scrape()
        return samples.get(
            ("cdnvideo_account_window_end_timestamp_seconds", (("account", account),))
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    async def stop(self) -> None:
        await self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self.proc.wait, 10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                await asyncio.to_thread(self.proc.wait)
