"""Integration: the DVR poller against the simulator over real HTTP.

Values are read back from the rendered exposition (what a scrape gets) and compared with the
simulator's own replies, fetched separately at the same instant of the fake clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.rig.areas import ACCOUNTS, DVR_S, STREAMS, Labels, Rig, lab, rig, series

__all__ = ["rig"]  # the fixture


# --- DVR -------------------------------------------------------------------------------------
async def expected_dvr(rig: Rig) -> dict[str, dict[Labels, float]]:
    want: dict[str, dict[Labels, float]] = {
        f"cdnvideo_dvr_{n}": {}
        for n in (
            "alive",
            "enabled",
            "window",
            "recorded_seconds",
            "ranges",
            "first_recording_timestamp_seconds",
            "last_recording_end_timestamp_seconds",
        )
    }
    for account, streams in STREAMS.items():
        for stream in streams:
            reply = await rig.upstream(f"/app/dvr-net/v1/{account}/streams/{stream}")
            for node in reply["data"]:
                k = lab(account=account, stream=stream, host=node["host"])
                dvr = node["dvr"]
                want["cdnvideo_dvr_alive"][k] = 1 if node["is_alive"] else 0
                want["cdnvideo_dvr_enabled"][k] = 1 if dvr["enabled"] else 0
                want["cdnvideo_dvr_window"][k] = dvr["window"]
                want["cdnvideo_dvr_recorded_seconds"][k] = dvr["duration"]
                want["cdnvideo_dvr_ranges"][k] = len(dvr["ranges"])
                if dvr["from"]:
                    want["cdnvideo_dvr_first_recording_timestamp_seconds"][k] = dvr["from"]
                if dvr["ranges"]:
                    want["cdnvideo_dvr_last_recording_end_timestamp_seconds"][k] = max(
                        r["from"] + r["duration"] for r in dvr["ranges"]
                    )
    return want


async def test_every_dvr_family_matches_the_platform_with_a_dead_node(rig: Rig) -> None:
    rig.sim.dvr.set_node("dvr-msk-2", alive=False)
    rig.clock.advance(600)
    rig.sim.requests.clear()
    for account in ACCOUNTS:
        assert await rig.poll("dvr", account)
    paths = sorted(r.path for r in rig.sim.requests.all())
    assert paths == sorted(
        f"/app/dvr-net/v1/{a}/streams/{s}" for a, streams in STREAMS.items() for s in streams
    )
    samples = await rig.scrape()
    want = await expected_dvr(rig)
    for name, values in want.items():
        assert series(samples, name) == values, name
    main = lab(account="demo-media", stream="live/main", host="dvr-msk-2")
    assert samples[("cdnvideo_dvr_alive", main)] == 0  # dead, but its archive is still reported
    assert samples[("cdnvideo_dvr_recorded_seconds", main)] > 0
    ok = lab(account="demo-media", stream="live/main", host="dvr-msk-1")
    assert samples[("cdnvideo_dvr_alive", ok)] == 1
    assert samples[("cdnvideo_dvr_window", ok)] == 14400
    assert samples[("cdnvideo_dvr_enabled", ok)] == 1
    assert samples[("cdnvideo_dvr_last_recording_end_timestamp_seconds", ok)] == rig.clock.time()
    assert len(series(samples, "cdnvideo_dvr_alive")) == 3 + 2 + 3 + 2 + 3  # hosts per stream


async def test_the_dvr_fragment_is_built_off_the_event_loop(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building the fragment of 500 streams holds the GIL ~20 ms: a worker thread does it."""
    import threading

    from exporter.dvr import poller as dvr_poller

    built: list[int] = []
    build = dvr_poller.dvr_fragment

    def spying(*args: Any) -> Any:
        built.append(threading.get_ident())
        return build(*args)

    monkeypatch.setattr(dvr_poller, "dvr_fragment", spying)
    assert await rig.poll("dvr", "demo-media")
    assert len(built) == 1
    assert built[0] != threading.get_ident()
    assert 'cdnvideo_dvr_alive{account="demo-media",stream="live/main",host="dvr-msk-1"} 1' in (
        await rig.text()
    )


async def test_a_node_that_disappears_loses_its_series(rig: Rig) -> None:
    assert await rig.poll("dvr", "demo-media")
    assert 'host="dvr-spb-1"' in await rig.text()
    rig.sim.dvr.set_node("dvr-spb-1", hidden=True)
    rig.clock.advance(DVR_S)
    assert await rig.poll("dvr", "demo-media")
    text = await rig.text()
    assert 'host="dvr-spb-1"' not in text
    assert 'cdnvideo_dvr_alive{account="demo-media",stream="live/main",host="dvr-msk-1"} 1' in text
    want = (await expected_dvr(rig))["cdnvideo_dvr_ranges"]
    polled = {k: v for k, v in want.items() if dict(k)["account"] == "demo-media"}
    assert series(await rig.scrape(), "cdnvideo_dvr_ranges") == polled
    assert len(polled) == 2 + 1  # live/main on two visible nodes, news on one


async def test_one_failing_dvr_stream_does_not_blank_the_others(rig: Rig) -> None:
    assert await rig.poll("dvr", "demo-media")
    rig.sim.faults.set("dvr", "500", match="/streams/news")
    rig.clock.advance(DVR_S)
    assert not await rig.poll("dvr", "demo-media")
    samples = await rig.scrape()
    assert samples[("cdnvideo_up", lab(account="demo-media", area="dvr"))] == 0
    streams = {dict(k)["stream"] for k in series(samples, "cdnvideo_dvr_alive")}
    assert streams == {"live/main", "news"}
