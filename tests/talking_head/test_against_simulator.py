"""Integration: the talking-head poller against the simulator over real HTTP, values read
back from the rendered exposition."""

from __future__ import annotations

from tests.rig.areas import ACCOUNTS, Rig, lab, rig

__all__ = ["rig"]  # the fixture


# --- talking head ----------------------------------------------------------------------------
async def test_every_talking_head_family(rig: Rig) -> None:
    rig.sim.requests.clear()
    for account in ACCOUNTS:
        assert rig.th.latest_configurations(account) is None
        assert await rig.poll("talking_head", account)
        assert rig.th.latest_configurations(account) is not None
    assert len(rig.sim.requests) == len(ACCOUNTS)  # one /configurations each
    samples = await rig.scrape()
    for i, account in enumerate(ACCOUNTS):
        a = lab(account=account)
        assert samples[("cdnvideo_talking_head_quota_limit", a)] == 100
        assert samples[("cdnvideo_talking_head_quota_left", a)] == 97  # three seeded videos
        assert samples[("cdnvideo_talking_head_watermark", a)] == i % 2
        assert samples[("cdnvideo_talking_head_voices", a)] == 5
        assert samples[("cdnvideo_talking_head_models", a)] == 3  # Natalia 1.0.0, 1.1.0; Mikhail
