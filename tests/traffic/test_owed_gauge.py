"""``cdnvideo_traffic_windows_owed`` and ``cdnvideo_traffic_settle_overdue_seconds`` tell what
is owed whatever the polls do: a poll that fails (the platform down, its connection reset)
still sets them from the ledger, so minutes past their settle age during an outage show."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.upstream.errors import UpstreamError
from tests.traffic.test_against_simulator import ACC, Rig, ServerFactory, rig

CONFIG = SimConfig(late_seconds=240, resources_per_account=2)


def gauges(r: Rig) -> tuple[float | None, float | None]:
    get = r.metrics.registry.get_sample_value
    return (
        get("cdnvideo_traffic_windows_owed", {"account": ACC}),
        get("cdnvideo_traffic_settle_overdue_seconds", {"account": ACC}),
    )


@pytest.mark.parametrize("fault", ["503", "reset"])
async def test_failing_polls_still_report_the_minutes_owed(
    aiohttp_server: ServerFactory, fault: str
) -> None:
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(revisit_minutes=5)
        await r.drive(poller, 4 * 60)  # minutes first-read, none at its settle age yet
        led = poller.accounts.ledger(ACC)
        first_read = sum(run.minutes for run in led.pending)
        assert first_read >= 3
        assert gauges(r) == (0.0, 0.0)
        r.sim.faults.set("traffic", fault)
        await r.drive(poller, 10 * 60, fails=True)  # every poll fails from here on
        now = r.clock.time() - 15  # the last poll
        due = [run for run in led.pending if run.due_at((5,)) <= now]
        assert sum(run.minutes for run in due) >= first_read  # every one past its age
        assert gauges(r) == (
            sum(run.minutes for run in due),
            max(now - run.due_at((5,)) for run in due),
        )


async def test_a_restart_after_a_kill_and_a_long_downtime_names_the_minutes_owed(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Nothing owed is dropped by a restart (issue 35 point 2): the runs waiting for a settle
    read are in the state file each poll saves, so after a kill (no final save) and 70 minutes
    down, past every age of (5, 15, 60), the first poll names every one of their minutes as
    owed, even when it fails (simulation seed 4105 asked for this)."""
    state_file = str(tmp_path / "traffic.json")
    schedule = (5, 15, 60)
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(revisit_minutes=schedule, state_file=state_file)
        await r.drive(poller, 20 * 60)
        assert gauges(r) == (0.0, 0.0)  # every age due so far was read
        waiting = sum(run.minutes for run in poller.accounts.ledger(ACC).pending)
        assert waiting >= 15  # the minutes waiting for age 15 or 60
        r.clock.advance(70 * 60)  # killed: no save at the stop, then down 70 minutes
        r.sim.faults.set("traffic", "503")
        restarted = r.poller(revisit_minutes=schedule, state_file=state_file)
        with pytest.raises(UpstreamError):
            await restarted.poll(ACC)
        runs = restarted.accounts.ledger(ACC).pending
        assert sum(run.minutes for run in runs) == waiting
        now = r.clock.time()
        assert gauges(r) == (waiting, max(now - run.due_at(schedule) for run in runs))
