"""A failing area keeps its last values for five intervals, then drops them (PollRunner and
the store), for each of restream, DVR and talking head against the simulator."""

from __future__ import annotations

import pytest

from tests.rig.areas import DVR_S, RESTREAM_S, T0, TH_S, Rig, lab, rig, series

__all__ = ["rig"]  # the fixture


# --- failures ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("area", "interval", "family"),
    [
        ("restream", RESTREAM_S, "cdnvideo_restream_status_code"),
        ("dvr", DVR_S, "cdnvideo_dvr_alive"),
        ("talking_head", TH_S, "cdnvideo_talking_head_quota_left"),
    ],
)
async def test_fault_keeps_last_values_then_drops_them_after_five_intervals(
    rig: Rig, area: str, interval: float, family: str
) -> None:
    account = "demo-shop"
    assert await rig.poll(area, account)
    good = series(await rig.scrape(), family)
    assert good
    up = ("cdnvideo_up", lab(account=account, area=area))
    last = ("cdnvideo_last_success_timestamp_seconds", lab(account=account, area=area))
    rig.sim.faults.set(area, "503")
    for _ in range(5):
        rig.clock.advance(interval)
        assert not await rig.poll(area, account)
        samples = await rig.scrape()
        assert samples[up] == 0
        assert samples[last] == T0
        assert series(samples, family) == good  # the last good values, unchanged
    rig.clock.advance(1)
    samples = await rig.scrape()
    assert series(samples, family) == {}  # older than 5 intervals: not shown as current
    assert samples[up] == 0
    rig.sim.faults.clear()
    rig.clock.advance(interval)
    assert await rig.poll(area, account)
    samples = await rig.scrape()
    assert samples[up] == 1
    assert series(samples, family)
