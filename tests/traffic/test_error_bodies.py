"""Per-resource replies that are no answer: an error body with or without `data: []`. Each
fails its window, which is read again; every resource counter ends exact (none falls a minute
short). An empty list for a window whose totals count traffic is an answer (the platform drops
deleted resources from its replies): counted, never failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exporter.simulator import SimConfig
from exporter.upstream import UpstreamError
from tests.traffic.test_against_simulator import (
    ACC,
    ServerFactory,
    assert_exact_after_drain,
    drain,
    rig,
)
from tests.traffic.test_dropped_resources import assert_account_exact_and_resources_sum_to_it

BODIES = [
    {"error": "internal error", "data": []},
    {"message": "temporarily unavailable", "data": []},
    {"description": "Request execution failed"},
    {"data": []},  # no resources, while the totals of the same window are not zero
]


@pytest.mark.parametrize("body", BODIES, ids=["error", "message", "description", "empty"])
async def test_a_per_resource_reply_that_is_no_answer_fails_its_window(
    aiohttp_server: ServerFactory, tmp_path: Path, body: dict[str, Any]
) -> None:
    state_file = str(tmp_path / "traffic.json")
    config = SimConfig(late_seconds=200, resources_per_account=3)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 5 * 60)
        # The next 6 per-resource replies (first reads and a settle read) are such bodies.
        r.sim.faults.set("traffic", "error_200", 6, match="resources", body=body)
        failed = 0
        for _ in range(60):
            try:
                await poller.poll(ACC)
            except UpstreamError:
                failed += 1
            r.clock.advance(15)
        assert r.sim.faults.get("traffic") is None  # all 6 were sent
        assert r.windows("missed") == 0
        if body != {"data": []}:
            assert failed >= 1  # the window failed rather than counting "no resources"
            assert await assert_exact_after_drain(r, state_file, first) > 0
            return
        # An answer (the platform drops deleted resources): counted. A resource listed again
        # at a later read gets its figures then; what a run's last read lists no resource for
        # is under __other__: the account exact, the resources and __other__ summing to it.
        assert failed == 0
        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert_account_exact_and_resources_sum_to_it(r, range(first, cursor + 60, 60))
