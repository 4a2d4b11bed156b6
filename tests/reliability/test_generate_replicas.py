"""Two copies of one shard behind one Service keep the platform's generate limit together.

Two real ``python -m exporter run`` processes serve the same account against one simulator
process, as the shipped StatefulSet runs them (``admin.replicas_per_shard: 2``). A caller
going through the Service reaches either; the simulator's request log counts what arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from .leaks import LeakGuard
from .procs import ExporterProcess, SimProcess, free_port
from .rig import T0

ACCOUNT = "acme-98"
TOKEN = "proc-SECRET-token-77e1"
WRITE = "adm-write-SECRET-replicas-01"
GENERATE = {
    "script": "Good morning, this is a test of the generate limit.",
    "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
    "voice": "Alena",
    "emotion": "good",
    "background": "office",
    "video_name": "replica test",
    "composition": {"orientation": "horizontal", "scale": 1, "crop": 1, "shift": 0},
}


def config(tmp: Path, name: str, sim_url: str, listen: str) -> Path:
    path = tmp / f"{name}.yml"
    doc = {
        "upstream": {"base_url": sim_url, "token": TOKEN, "timeout_seconds": 5},
        "accounts": [{"name": ACCOUNT}],
        "traffic": {"state_file": str(tmp / f"{name}-state.json")},
        "restream": {"enabled": False},
        "dvr": {"enabled": False},
        "talking_head": {"enabled": False},
        "listen": listen,
        "admin": {"enabled": True, "write_token": WRITE, "replicas_per_shard": 2},
        "log": {"level": "info", "format": "json"},
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
async def two_replicas(
    tmp_path: Path, leak_guard: LeakGuard
) -> AsyncIterator[tuple[SimProcess, list[ExporterProcess]]]:
    leak_guard.secret(TOKEN, WRITE)
    args = ("--accounts", ACCOUNT, "--token", TOKEN)
    sim = await SimProcess.start(T0, args, clock_file=tmp_path / "clock")
    running: list[ExporterProcess] = []
    try:
        for name in ("pod-0", "pod-1"):
            listen = f"127.0.0.1:{free_port()}"
            exp = await ExporterProcess.start(
                config(tmp_path, name, sim.url, listen),
                listen,
                tmp_path / f"{name}.log",
                tmp_path / "clock",
                leak_guard,
            )
            running.append(exp)
        yield sim, running
    finally:
        for exp in running:
            await exp.stop()
            leak_guard.add("exporter process log", exp.log())
        await sim.stop()


async def generate(http: aiohttp.ClientSession, exp: ExporterProcess) -> tuple[int, Any]:
    url = f"{exp.url}/api/v1/talking-head/{ACCOUNT}/generate"
    headers = {"Authorization": f"Bearer {WRITE}"}
    async with http.post(url, json=GENERATE, headers=headers) as resp:
        text = await resp.text()
        exp.guard.add("admin response", text)
        return resp.status, await resp.json(content_type=None)


async def test_two_replicas_of_a_shard_send_at_most_ten_generates_a_minute(
    two_replicas: tuple[SimProcess, list[ExporterProcess]],
) -> None:
    sim, replicas = two_replicas
    async with aiohttp.ClientSession() as http:
        # Through the Service a caller reaches the pods in turn: 24 requests, 12 each.
        answers = await asyncio.gather(*(generate(http, replicas[i % 2]) for i in range(24)))
    statuses = [status for status, _ in answers]
    assert statuses.count(202) == 10
    assert statuses.count(429) == 14
    refused = next(body for status, body in answers if status == 429)
    assert "the platform's 10 shared by 2 replicas" in refused["message"]
    sent = [
        r
        for r in await sim.requests("talking_head")
        if r["method"] == "POST" and r["path"].endswith("/generate")
    ]
    assert len(sent) == 10
