"""After a restart the landing charts start from the last hour kept beside the state file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from aiohttp import web

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.traffic import audit_record
from exporter.traffic import state as state_module
from exporter.web.app import AREAS
from tests.rig.daemon import running

T0 = 1_767_225_600 + 17 * 3600 + 5
ACCOUNT = "demo-media"


async def _run(sim_url: str, token: str, clock: FakeClock, state: Path, minutes: int) -> int:
    """Poll traffic ``minutes`` of platform time, stop cleanly; the points charted at the end."""
    settings = parse_config(
        {
            "upstream": {"base_url": sim_url, "token": token},
            "accounts": [ACCOUNT],
            "traffic": {"state_file": str(state), "per_resource": False},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
        },
        env={},
    )
    async with running(settings, clock) as daemon:
        service = daemon.service
        (job,) = service.jobs(ACCOUNT)
        for _ in range(minutes * 4):
            await service.ctx.runner.run(job.area, ACCOUNT, job.poll)
            clock.advance(job.seconds)
        return len(daemon.app[AREAS].traffic.history.points(ACCOUNT))


async def test_charts_start_from_the_kept_hour_after_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=(ACCOUNT,), resources_per_account=2), clock)
    sim_runner = await serve(sim)
    state = tmp_path / "state.json"
    try:
        charted = await _run(sim_runner.base_url, sim.token, clock, state, minutes=12)
        assert charted >= 8  # the first run charted its windows
        assert (tmp_path / "state.json.charts.json").is_file()

        clock.advance(300)  # five minutes down
        settings = parse_config(
            {
                "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
                "accounts": [ACCOUNT],
                "traffic": {"state_file": str(state)},
            },
            env={},
        )

        async def restored(app: web.Application) -> None:  # built, not started yet
            history = app[AREAS].traffic.history
            assert len(history.points(ACCOUNT)) == charted  # before any poll of the new process

        async with running(settings, clock, before_start=restored) as daemon:
            page = await (await daemon.client.get("/")).text()
        assert "No traffic data yet" not in page
        assert page.count("<polyline") >= 3  # requests, bandwidth and hit ratio

        clock.advance(3600)  # an hour later, the kept points are too old to chart

        async def too_old(app: web.Application) -> None:
            assert app[AREAS].traffic.history.points(ACCOUNT) == ()

        async with running(settings, clock, before_start=too_old):
            pass
    finally:
        await sim_runner.cleanup()


async def test_a_damaged_charts_file_is_ignored(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    (tmp_path / "state.json.charts.json").write_text('{"version": 1, "accounts": {"a": [[1]]}}')
    settings = parse_config(
        {
            "upstream": {"base_url": "http://127.0.0.1:9", "token": "t0ken"},
            "accounts": ["a"],
            "traffic": {"state_file": str(state)},
        },
        env={},
    )

    async def ignored(app: web.Application) -> None:
        assert app[AREAS].traffic.history.points("a") == ()

    async with running(settings, FakeClock(T0), before_start=ignored):
        pass


async def test_the_charts_file_and_the_audit_record_are_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file the traffic job writes, while it runs and at shutdown (the charts' once a
    minute, the audit record's pieces), is serialised and fsynced on the refresh worker, never
    the loop's thread (every file the daemon keeps: tests/lifecycle/test_files_off_loop.py)."""
    writers: dict[str, set[str]] = {}
    real = state_module.write_atomic

    def spy(path: str, data: bytes) -> None:
        writers.setdefault(Path(path).name, set()).add(threading.current_thread().name)
        real(path, data)

    monkeypatch.setattr(state_module, "write_atomic", spy)
    monkeypatch.setattr(audit_record, "write_atomic", spy)
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=(ACCOUNT,), resources_per_account=2), clock)
    sim_runner = await serve(sim)
    try:
        await _run(sim_runner.base_url, sim.token, clock, tmp_path / "state.json", minutes=12)
    finally:
        await sim_runner.cleanup()
    charts = writers["state.json.charts.json"]  # once a minute, and at shutdown
    assert charts, "no charts write"
    assert all(name.startswith("refresh") for name in charts)
    assert writers["head.json"]  # the audit record's pieces
    assert all(name.startswith("refresh") for name in writers["head.json"])
