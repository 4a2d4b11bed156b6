"""The whole daemon (``create_app`` without its timers, on a FakeClock) with ``remote_write``
to a receiver over HTTP: every minute settled during the run arrives once, at its start, with
the simulator's final figures (late data included), and the token goes in the header only."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from tests.remotewrite.daemon import ACC, T0, ServerFactory, daemon

TOKEN = "remote-write-daemon-token-42"


async def test_the_daemon_writes_each_settled_minute_once_with_its_final_figures(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    with capture_logs() as logs:
        async with daemon(aiohttp_server, tmp_path / "traffic.json", bearer_token=TOKEN) as d:
            await d.run_until(T0 + 15 * 60)
    receiver, sim = d.receiver, d.sim

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
