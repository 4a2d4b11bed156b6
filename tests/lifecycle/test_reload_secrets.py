"""A reload applies rotated secret files (the admin tokens, the upstream token) and reads them
off the event loop: a FIFO or a file that cannot be read keeps the running config, names its
key, and ``/healthz`` answers meanwhile. The daemon's app against the real simulator."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

from exporter.config import load_config
from exporter.simulator import SimConfig, Simulator
from exporter.simulator import serve as serve_sim
from exporter.support.clock import FakeClock
from tests.rig.daemon import StartDaemon

READ, WRITE = "read-token-0123456789", "write-token-0123456789"
NEW_READ, NEW_WRITE = "read-token-rotated-9876", "write-token-rotated-9876"
LIST = "/api/v1/restream/demo-media/resources"


class Files:
    def __init__(self, tmp_path: Path) -> None:
        self.read = tmp_path / "read"
        self.write = tmp_path / "write"
        self.read.write_text(READ + "\n")
        self.write.write_text(WRITE + "\n")


@pytest.fixture
async def daemon(start_daemon: StartDaemon, tmp_path: Path) -> AsyncIterator[tuple[Any, Files]]:
    """The daemon with the admin API and ``POST /-/reload`` on, its admin tokens from files."""
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    runner = await serve_sim(sim)
    files = Files(tmp_path)
    config = tmp_path / "config.yml"
    raw = {
        "upstream": {"base_url": runner.base_url, "token": sim.token},
        "accounts": ["demo-media"],
        "admin": {
            "enabled": True,
            "read_token_file": str(files.read),
            "write_token_file": str(files.write),
        },
    }
    config.write_text(yaml.safe_dump(raw))
    try:
        started = await start_daemon(
            load_config(config, env={}),
            clock,
            load=lambda: load_config(config, env={}),
            enable_lifecycle=True,
        )
        yield started.client, files
    finally:
        await runner.cleanup()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_rotated_admin_token_files_apply_on_reload(daemon: tuple[Any, Files]) -> None:
    client, files = daemon
    assert (await client.get(LIST, headers=bearer(READ))).status == 200
    files.read.write_text(NEW_READ + "\n")
    files.write.write_text(NEW_WRITE + "\n")
    with capture_logs() as logs:
        resp = await client.post("/-/reload", headers=bearer(WRITE))
        text = await resp.text()
    assert resp.status == 200, text
    assert "admin.read_token" in text
    assert "admin.write_token" in text
    assert "restart" not in text  # applied, not postponed
    assert NEW_WRITE not in repr(logs) + text
    assert NEW_READ not in repr(logs) + text
    assert (await client.post("/-/reload", headers=bearer(WRITE))).status == 401
    assert (await client.get(LIST, headers=bearer(READ))).status == 401
    assert (await client.get(LIST, headers=bearer(NEW_READ))).status == 200
    assert (await client.post("/-/reload", headers=bearer(NEW_WRITE))).status == 200


def _unblock_later(path: Path, seconds: float) -> threading.Thread:
    """After ``seconds``, a writer for the FIFO (if someone waits to read it), so a reader
    that blocked on it is released and the test ends either way."""

    def write() -> None:
        time.sleep(seconds)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # nobody is reading: nothing to release
            return
        os.write(fd, NEW_WRITE.encode())
        os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


async def test_a_fifo_token_file_keeps_the_running_config_and_healthz_answers(
    daemon: tuple[Any, Files],
) -> None:
    client, files = daemon
    files.write.unlink()
    os.mkfifo(files.write)  # no writer: whoever opens it to read waits for one
    releaser = _unblock_later(files.write, 3.0)
    started = time.monotonic()
    reload = asyncio.create_task(client.post("/-/reload", headers=bearer(WRITE)))
    await asyncio.sleep(0.05)  # the reload has begun
    health = await client.get("/healthz")
    took = time.monotonic() - started
    assert health.status == 200
    assert took < 1.5  # the loop did not wait for the file (3 s)
    resp = await reload
    text = await resp.text()
    assert resp.status == 500
    assert f"admin.write_token_file: {str(files.write)!r} is not a regular file" in text
    assert (await client.post("/-/reload", headers=bearer(WRITE))).status == 500  # still kept
    assert (await client.get(LIST, headers=bearer(READ))).status == 200
    releaser.join()
