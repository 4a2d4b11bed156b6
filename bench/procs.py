"""Child processes of the benchmark (started with this interpreter) and their /proc figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

from aiohttp import web

TICKS = os.sysconf("SC_CLK_TCK")
# The ready line may list every DVR stream of the simulator (twice): longer than asyncio's
# default stream buffer at the largest scales.
READY_LINE_LIMIT = 16 << 20


@dataclass
class Child:
    """A benchmark child process and the JSON line it printed once it was listening."""

    proc: asyncio.subprocess.Process
    ready: dict[str, Any]

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def stop(self, grace: float = 10.0) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()


async def start(module: str, *args: str, within: float = 120.0) -> Child:
    """Run ``python -m module args`` and wait for the JSON line it prints when ready.

    Its stderr goes to ours (the exporter logs warnings only), stdout is read for that line.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        limit=READY_LINE_LIMIT,
    )
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), within)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise RuntimeError(f"{module} did not report ready within {within:.0f} s") from None
    if not line:
        await proc.wait()
        raise RuntimeError(f"{module} exited with {proc.returncode} before it was ready")
    return Child(proc, json.loads(line))


def cpu_times(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process so far (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after the command name: state is field 3, utime 14 and stime 15 (1-based, proc(5))
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads)."""
    return sum(cpu_times(pid))


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB: resident now and its peak."""
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024  # kB
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": sys.version.split()[0],
        "load_avg": os.getloadavg(),
    }


async def announce_until_signal(runner: web.AppRunner, ready: dict[str, Any]) -> None:
    """Child side: print ``ready`` as one JSON line, serve until SIGINT/SIGTERM, clean up."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(json.dumps(ready), flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


async def serve_until_signal(app: web.Application, ready: dict[str, Any] | None = None) -> None:
    """Child side: serve ``app`` on a free loopback port, announce its base_url, wait."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    await announce_until_signal(runner, {"base_url": f"http://127.0.0.1:{port}", **(ready or {})})
