"""Every file the daemon keeps is written, fsynced, renamed and removed off the event loop:
the traffic state file and its cursor file, the audit record, the charts and the remote-write
store, while it runs and at shutdown (the whole daemon, ``create_app`` without its timers, on
a FakeClock)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from exporter.config import parse_config
from exporter.support import offloop
from exporter.support.clock import FakeClock
from tests.remotewrite.daemon import T0, ServerFactory, daemon
from tests.rig.daemon import running

CALLS = ("fsync", "replace", "unlink", "pread")  # what writing (and copying) a file does


async def test_no_file_is_written_on_the_event_loop(
    aiohttp_server: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, list[tuple[int, str]]] = {name: [] for name in CALLS}

    def spy(name: str) -> None:
        real = getattr(os, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen[name].append((threading.get_ident(), str(args[0])))
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, wrapped)

    for name in CALLS:
        spy(name)
    async with daemon(aiohttp_server, tmp_path / "traffic.json") as d:
        await d.run_until(T0 + 12 * 60)
    # left: the shutdown's saves done

    loop_thread = threading.get_ident()
    on_loop = {name: [p for t, p in calls if t == loop_thread] for name, calls in seen.items()}
    assert on_loop == {name: [] for name in CALLS}
    assert {Path(path).name for _, path in seen["replace"]} >= {
        ".traffic.json.tmp",  # the state file
        ".traffic.json.cursors.json.tmp",
        ".traffic.json.charts.json.tmp",
        ".head.json.tmp",  # the audit record's head
        ".written.json.tmp",  # the remote-write store's index
    }
    assert any(path.endswith(".snappy") for _, path in seen["unlink"])  # a minute written
    assert d.receiver.stored
    assert seen["pread"]  # a save in parts copied from the file before
    assert seen["fsync"]


async def test_the_shutdown_saves_leave_the_event_loop_serving(tmp_path: Path) -> None:
    """At shutdown the traffic area's saves wait for the refresh worker while the loop goes
    on answering; they are written once the steps queued before them have run."""
    state = tmp_path / "traffic.json"
    settings = parse_config(
        {
            "upstream": {"base_url": "http://127.0.0.1:9", "token": "t" * 24},
            "accounts": ["acme"],
            "traffic": {"state_file": str(state)},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
        },
        env={},
    )
    async with running(settings, FakeClock(T0)) as d:
        release = threading.Event()
        busy = offloop.queued(release.wait, 30)  # a refresh step still running
        stopping = asyncio.ensure_future(d.service.stop())
        answer = await d.client.get("/healthz")  # served while the saves wait
        assert answer.status == 200
        assert not stopping.done()
        assert not state.exists()
        release.set()
        await stopping
        assert await busy
        assert state.is_file()
        assert (tmp_path / "traffic.json.charts.json").is_file()
