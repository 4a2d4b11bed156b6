"""metrics.exclude for the restream, DVR and talking-head areas against the simulator: the
families left out are never built (no key in the published fragment), the rest are served
with the same values, and health families stay."""

from __future__ import annotations

from exporter.exposition import FamilySelection
from tests.rig.areas import ACCOUNTS, Labels, Rig, rig

__all__ = ["rig"]  # the fixture
AREA_PREFIXES = ("cdnvideo_restream_", "cdnvideo_dvr_", "cdnvideo_talking_head_")

EXCLUDE = ("^cdnvideo_dvr_(alive|ranges)$", "status_changed", "^cdnvideo_talking_head_quota_")
GONE = {
    "cdnvideo_dvr_alive",
    "cdnvideo_dvr_ranges",
    "cdnvideo_restream_status_changed_timestamp_seconds",
    "cdnvideo_talking_head_quota_limit",
    "cdnvideo_talking_head_quota_left",
}


def names(text: str) -> set[str]:
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


async def test_left_out_families_are_not_built_and_the_rest_are_unchanged(rig: Rig) -> None:
    await rig.poll_everything()
    full_text = await rig.text()
    full = await rig.scrape()
    rig.store.selection = FamilySelection(exclude=(*EXCLUDE, "^cdnvideo_up$"))
    for account in ACCOUNTS:  # poll again at the same instant: same replies, fewer families
        for area in ("restream", "restream_history", "dvr", "talking_head"):
            assert await rig.poll(area, account)
    keys = rig.store.keys()
    assert len(keys) == 4 * len(ACCOUNTS)  # restream status, history, DVR, talking head
    for key in keys:
        fragment = rig.store.fragment(key, include_stale=True)
        assert fragment is not None
        assert not {spec.name for spec in fragment.samples} & GONE, key
    cut_text = await rig.text()
    cut = await rig.scrape()
    assert names(full_text) >= GONE
    assert names(cut_text) == names(full_text) - GONE
    kept = {k: v for k, v in area_series(full).items() if not k[0].startswith(tuple(GONE))}
    assert len(kept) > 50
    assert area_series(cut) == kept
    assert cut[("cdnvideo_up", (("account", "demo-media"), ("area", "dvr")))] == 1  # health stays


def area_series(samples: dict[tuple[str, Labels], float]) -> dict[tuple[str, Labels], float]:
    """The series of the three areas (self-metrics such as poll counts move on each poll)."""
    return {k: v for k, v in samples.items() if k[0].startswith(AREA_PREFIXES)}
