"""The whole daemon (``create_app`` without its timers, on a FakeClock) with ``remote_write``
to a receiver over HTTP: every minute settled during the run arrives once, at its start, with
the simulator's final figures (late data included), and the token goes in the header only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer
from structlog.testing import capture_logs

from exporter.config import parse_config
from exporter.runtime.scheduler import EXACT
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.daemon import REMOTE_WRITER, SERVICE, create_app
from tests.remotewrite.receiver import Receiver

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z
ACC = "demo-media"
TOKEN = "remote-write-daemon-token-42"
ServerFactory = Callable[..., Awaitable[TestServer]]


async def test_the_daemon_writes_each_settled_minute_once_with_its_final_figures(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    receiver = Receiver()
    server = await aiohttp_server(receiver.app(), host="127.0.0.1", port=0)
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=(ACC,), resources_per_account=2, late_seconds=90), clock)
    sim_runner = await serve(sim)
    conf = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "accounts": [ACC],
            "traffic": {"revisit_minutes": 2, "state_file": str(tmp_path / "traffic.json")},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
            "remote_write": {"url": str(server.make_url("/api/v1/write")), "bearer_token": TOKEN},
            "log": {"level": "error", "format": "json"},
        },
        env={},
    )
    app = await create_app(conf, clock=clock, schedule=False, timing=EXACT)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        with capture_logs() as logs:
            scheduler = app[SERVICE].scheduler
            end = T0 + 15 * 60
            while (due := scheduler.next_due()) is not None and due < end:
                clock.set(due)
                await scheduler.run_due()
            await app[REMOTE_WRITER].flush()
    finally:
        await runner.cleanup()
        await sim_runner.cleanup()

    totals = {
        s.timestamp_ms // 1000: s.value
        for s in receiver.stored
        if dict(s.labels) == {"__name__": "cdnvideo_minute_account_requests", "account": ACC,
                              "side": "edge"}
    }  # fmt: skip
    stamps = [
        s.timestamp_ms
        for s in receiver.stored
        if dict(s.labels)["__name__"] == "cdnvideo_minute_account_requests"
    ]
    assert len(stamps) == len(set(stamps)) * 2  # edge and origin, each minute once
    minutes = sorted(totals)
    assert len(minutes) >= 10
    assert minutes == list(range(minutes[0], minutes[-1] + 60, 60))
    for minute, value in totals.items():
        assert value == sim.traffic_final(ACC, minute)["edge_requests_total"]
    for res in sim.resources(ACC):
        got = {
            s.timestamp_ms // 1000: s.value
            for s in receiver.stored
            if dict(s.labels).get("resource") == res.id and ("side", "edge") in s.labels
            and dict(s.labels)["__name__"] == "cdnvideo_minute_resource_requests"
        }  # fmt: skip
        assert got == {m: sim.traffic_final(ACC, m, res.id)["edge_requests_total"] for m in minutes}
    assert {h["Authorization"] for h in receiver.headers} == {f"Bearer {TOKEN}"}
    assert TOKEN not in repr(logs)
