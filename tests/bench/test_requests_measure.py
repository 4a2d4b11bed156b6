"""Upstream requests by area, measured in the simulator's request log (small scales only)."""

from __future__ import annotations

from bench.requests import measure, table


async def test_history_reads_only_changed_resources_and_a_share_of_the_rest() -> None:
    before = await measure(40, minutes=20, every_resource=True, warmup_minutes=6)
    after = await measure(40, minutes=20, warmup_minutes=6)
    # 8 restream resources: a status pair every 30 s (4/min) and history every 5 minutes
    assert before.per_minute["restream"] == 4 + 8 / 5
    assert 4 < after.per_minute["restream"] <= 4 + 0.5
    assert after.per_minute["traffic"] == before.per_minute["traffic"] == 2.4
    assert after.per_minute["dvr"] == before.per_minute["dvr"] == 4
    assert "changed + round-robin" in table([after])


async def test_a_tight_budget_postpones_polls_but_never_traffic() -> None:
    free = await measure(10, minutes=20, warmup_minutes=6)
    assert free.busiest_minute > 6
    tight = await measure(10, minutes=20, budget=6, warmup_minutes=6)
    assert tight.busiest_minute <= 6  # in any 60 s of the run
    assert tight.per_minute["traffic"] == 2.4  # traffic reads come first
    assert tight.postponed["traffic"] == 0
    assert tight.postponed["restream"] > 0  # counted, not dropped silently
    assert tight.up == dict.fromkeys(("traffic", "restream", "dvr", "talking_head"), 1.0)
