"""The two ends of a settle run's life besides its last read: given up after a day in which
the platform answered no read, and dropped when the schedule is shortened across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from exporter.simulator import SimConfig
from exporter.traffic.poller import GIVE_UP_MINUTES_AT_LEAST
from tests.traffic.test_against_simulator import ACC, ServerFactory, counter, outage, rig

CONFIG = SimConfig(late_seconds=200, resources_per_account=2)


@pytest.mark.slow
async def test_a_run_is_given_up_only_after_a_day_without_any_read(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(revisit_minutes=5)
        await r.drive(poller, 4 * 60)
        led = poller.ledger(ACC)
        runs = list(led.pending)
        owed = sum(run.minutes for run in runs)
        assert owed > 0
        due = max(run.due_at((5,)) for run in runs)
        # The platform fails every read for a day less 5 minutes after the last run fell due:
        # nothing is given up, the runs wait.
        gap = due + GIVE_UP_MINUTES_AT_LEAST * 60 - 300 - r.clock.time()
        await outage(r, poller, gap, "503")
        assert r.windows("given_up") == 0
        assert all(run in led.pending for run in runs)
        with capture_logs() as logs:
            await outage(r, poller, 600, "503")
        assert r.windows("given_up") == owed
        assert not any(run in led.pending for run in runs)
        given_up = [e for e in logs if e["event"] == "traffic_settle_given_up"]
        assert [e["why"] for e in given_up] == ["no settle read for a day"] * len(runs)


async def test_a_shortened_schedule_drops_the_runs_past_its_last_age(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[1, 5, 30])
        await r.drive(poller, 12 * 60)
        pending = poller.ledger(ACC).pending
        later = {run.start for run in pending if run.stage >= 1}
        assert later  # runs past their 1-minute read, waiting for the 5- or 30-minute one
        assert any(run.stage == 0 for run in pending)
        counted = counter(r.fragment(), "edge_requests_total")
        before = r.windows("revised")
        restarted = r.poller(state_file=state_file, revisit_minutes=[1])
        await restarted.poll(ACC)
        left = restarted.ledger(ACC).pending
        assert left
        assert all(run.stage == 0 for run in left)
        assert not later & {run.start for run in left}  # past the new last age: dropped
        assert r.windows("given_up") == 0  # a choice of the operator, not a loss to alert on
        after = counter(r.fragment(), "edge_requests_total")
        assert after is not None
        assert counted is not None
        assert after >= counted
        assert r.windows("revised") >= before
