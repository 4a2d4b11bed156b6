"""Resources the platform drops from its per-resource replies once deleted (simulator quirk
``drop-deleted-resources``), their own minutes and late data included, while the account
totals keep them: no read of the account fails, the account counters equal the platform's
final figures, and the resources plus ``__other__`` sum to the account, key by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.simulator.churn import boundary
from exporter.traffic.ledger import OTHER
from exporter.traffic.parse import COUNT_KEYS
from exporter.traffic.poller import TrafficPoller
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    counter,
    drain,
    rig,
)
from tests.traffic.test_final_minutes import Told

DROP = frozenset({"drop-deleted-resources"})


async def drive_counting_failures(r: Rig, poller: TrafficPoller, seconds: float) -> int:
    """Poll every 15 s for ``seconds``; how many polls failed."""
    failed = 0
    end = r.clock.time() + seconds
    while r.clock.time() < end:
        try:
            await poller.poll(ACC)
        except Exception:
            failed += 1
        r.scrape()
        r.clock.advance(15)
    return failed


def assert_account_exact_and_resources_sum_to_it(r: Rig, minutes: range) -> None:
    f = r.fragment()
    for key in COUNT_KEYS:
        truth = sum(r.sim.traffic_truth(ACC, m)[key] for m in minutes)
        assert counter(f, key) == truth, key
        ids = [res.id for res in r.sim.resources(ACC)] + [OTHER]
        listed = sum(counter(f, key, rid) or 0.0 for rid in ids)
        assert listed == truth, key


@pytest.mark.parametrize(("resources", "gone"), [(1, "100001"), (3, "100002")])
async def test_a_resource_dropped_from_replies_after_deletion_loses_nothing_unnamed(
    aiohttp_server: ServerFactory, tmp_path: Path, resources: int, gone: str
) -> None:
    """Deleted 20 minutes in, while its last minutes still gain late data (figures rise for
    4 minutes): the account's only resource (every later per-resource reply empty while the
    totals count its late data), or one of three. No poll fails, no minute is missed, and
    after the last settle reads the late data the replies no longer list is under
    ``__other__``, also in what remote write is told."""
    state_file = str(tmp_path / "traffic.json")
    config = SimConfig(late_seconds=240, resources_per_account=resources, quirks=DROP)
    told = Told()
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[2, 10])
        poller.reader.final_minutes = told
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        assert await drive_counting_failures(r, poller, 20 * 60) == 0
        at = boundary(r.clock.time())
        r.sim.delete_resource(ACC, gone, at)
        if resources == 1:  # traffic again from a new resource 10 minutes later
            r.sim.add_resource(ACC, at + 600)
        assert await drive_counting_failures(r, poller, 30 * 60) == 0
        assert r.windows("missed") == 0
        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.windows("given_up") == 0
        minutes = range(first, cursor + 60, 60)
        assert_account_exact_and_resources_sum_to_it(r, minutes)
        f = r.fragment()
        assert (counter(f, "edge_requests_total", OTHER) or 0) > 0  # the dropped late data
        # What remote write is told of the minutes settled before the restart: resources and
        # __other__ sum to the account in each run.
        assert told.runs
        for _start, _end, totals, per_resource in told.runs:
            for key, value in totals.items():
                assert sum(v.get(key, 0.0) for v in per_resource.values()) == value, key
