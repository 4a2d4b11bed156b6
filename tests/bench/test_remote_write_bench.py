"""bench/remotewrite.py: the two exporters differ in remote_write only, the receiver counts
what came in the steady phase, and the row gives each figure off / on with the ratio (the
figures themselves are read by people, never bounded by a test)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bench import remotewrite
from bench.remotewrite import Receiver, Row, Side
from exporter.remotewrite.wire import Series, encode

SIM = {"base_url": "http://127.0.0.1:1", "token": "t", "account": "bench", "dvr_streams": []}


def test_the_two_configs_differ_in_remote_write_only(tmp_path: Path) -> None:
    off = remotewrite.config(SIM, tmp_path / "state.json", None)
    on = remotewrite.config(SIM, tmp_path / "state.json", "http://r/api/v1/write")
    assert on.pop("remote_write") == {"url": "http://r/api/v1/write"}
    assert on == off
    assert off["traffic"]["revisit_minutes"] == 1
    assert off["traffic"]["delay_seconds"] == 0


async def test_the_receiver_counts_requests_bytes_and_samples_by_time() -> None:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/api/v1/write", receiver.write)
    body = encode([Series((("__name__", "m"), ("i", str(i))), float(i), 60_000) for i in range(3)])
    async with TestClient(TestServer(app)) as client:
        for _ in range(2):
            reply = await client.post("/api/v1/write", data=body)
            assert reply.status == 204
    (t0, _, _), (t1, _, _) = receiver.bodies
    assert receiver.between(t0, t1 + 1) == (2, 2 * len(body), 6)
    assert receiver.between(t1 + 1, t1 + 2) == (0, 0, 0)


def test_a_row_gives_off_on_and_the_ratio() -> None:
    row = Row(
        1000,
        off=Side(
            cpu_s_per_min=1.0,
            rss_mb=100,
            peak_rss_mb=110,
            worst_healthz_ms=9,
            slow_healthz=0,
            healthz=100,
            upstream_per_min=6.0,
            traffic_per_min=2.0,
        ),
        on=Side(
            cpu_s_per_min=1.5,
            rss_mb=120,
            peak_rss_mb=130,
            worst_healthz_ms=12,
            slow_healthz=2,
            healthz=90,
            upstream_per_min=8.0,
            traffic_per_min=4.0,
        ),
        requests_per_min=1.0,
        bytes_per_min=36 * 1024,
        samples_per_min=4012,
    )
    header, rule, line = remotewrite.table([row]).splitlines()
    assert header.count("|") == rule.count("|") == line.count("|") == len(remotewrite.HEADERS) + 1
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells == [
        "1000",
        "1.0 / 4,012 / 36 kB",
        "1.00 / 1.50 (1.50x)",
        "100 / 120 (1.20x)",
        "110 / 130",
        "9 / 12 (0 of 100 / 2 of 90)",
        "6.0 / 8.0 (2.0 / 4.0)",
    ]
