"""The two ends of a settle run's life besides its last read: given up after a day in which
the platform answered no read, and read at the new ages when the schedule changes across a
restart (past a shortened schedule's last age: one final read, then dropped)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.simulator.routes_traffic import parse_minute
from exporter.traffic.accounts import MOVED, REMOVED, Release
from exporter.traffic.policy import GIVE_UP_MINUTES_AT_LEAST
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_against_simulator import (
    ACC,
    ServerFactory,
    assert_counters_equal_truth,
    drain,
    outage,
    rig,
)
from tests.traffic.test_final_minutes import Told

CONFIG = SimConfig(late_seconds=200, resources_per_account=2)


@pytest.mark.slow
async def test_a_run_is_given_up_only_after_a_day_without_any_read(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(revisit_minutes=5)
        await r.drive(poller, 4 * 60)
        led = poller.accounts.ledger(ACC)
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


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ([5, 15, 60], [5, 60]),  # the same last age: runs waiting for 60 still read at 60
        ([2, 10, 30], [5, 60]),  # runs waiting for 30 are read at 60, the new next age
    ],
)
async def test_a_schedule_changed_across_a_restart_reads_what_is_owed(
    aiohttp_server: ServerFactory, tmp_path: Path, before: list[int], after: list[int]
) -> None:
    # Figures rise for 25 minutes after a minute closes: a read at 30 or 60 minutes is final,
    # one at 15 or earlier is not.
    config = SimConfig(late_seconds=25 * 60, resources_per_account=2)
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=before)
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 45 * 60)
        waiting = {run.next_age(tuple(before)) for run in poller.accounts.ledger(ACC).pending}
        assert waiting == set(before)  # runs wait for each age of the old schedule
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor is not None
        # Restarted with the new schedule (no new minute ready): every run is read at the
        # new schedule's ages above the one it was read at, through the last.
        await drain(r, state_file, revisit_minutes=after)
        assert r.windows("given_up") == 0
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0


async def test_runs_past_a_shortened_schedules_last_age_get_one_final_read(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[1, 5, 30])
        await r.drive(poller, 12 * 60)
        past = [run.window for run in poller.accounts.ledger(ACC).pending if run.settled >= 1]
        assert past  # runs past their 1-minute read, waiting for the 5- or 30-minute one
        restarted_at = r.clock.time()
        restarted = await drain(r, state_file, revisit_minutes=[1])
        assert restarted.accounts.ledger(ACC).pending == []
        assert r.windows("given_up") == 0  # a choice of the operator, not a loss to alert on
        # Each was read once more (both halves) after the restart, then dropped.
        asked = Counter(
            (parse_minute("start", q["start"]), parse_minute("end", q["end"]))
            for q in (dict(req.query) for req in r.sim.requests if req.time >= restarted_at)
        )
        assert all(asked[w.start, w.end] == 2 for w in past), (past, asked)


async def _switched_off(
    aiohttp_server: ServerFactory, tmp_path: Path, file_says_schedule: bool
) -> None:
    """``[5, 15, 60] -> 0`` across a restart with runs owed at every age. The runs finish the
    schedule they were counted under (saved with the state file: their last read at 60), or,
    from a file that does not say it (``file_says_schedule`` false: an earlier release's),
    each gets one last read (at once when read at an age already, else 5 minutes after its
    first read). Either way each is told to the output of final figures, the owed gauge
    counts only what is read, nothing is dropped untold, and every counter equals the
    platform's final figures."""
    state_file = tmp_path / "traffic.json"
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(state_file=str(state_file), revisit_minutes=[5, 15, 60])
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 45 * 60)
        owed = poller.accounts.ledger(ACC).pending
        assert {run.next_age((5, 15, 60)) for run in owed} == {5, 15, 60}
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor is not None
        if not file_says_schedule:
            doc = json.loads(state_file.read_bytes())
            for account in doc["accounts"].values():
                del account["schedule"]
            state_file.write_text(json.dumps(doc))
        told = Told()
        restarted = r.poller(state_file=str(state_file), revisit_minutes=0, delay_seconds=86_400)
        restarted.reader.final_minutes = told
        await restarted.poll(ACC)
        schedule = restarted.accounts.ledger(ACC).schedule
        assert schedule == ((5, 15, 60) if file_says_schedule else ())
        for _ in range(40):  # 10 minutes: the runs not read at any age are read at 5
            await restarted.poll(ACC)
            r.clock.advance(15)
        left = restarted.accounts.ledger(ACC).pending
        if file_says_schedule:
            # still at their own ages: none read before the age the schedule gives it
            assert left
            assert {run.next_age((5, 15, 60)) for run in left} <= {15, 60}
            for _ in range(4 * 60):  # an hour: their age 60
                await restarted.poll(ACC)
                r.clock.advance(15)
        assert restarted.accounts.ledger(ACC).pending == []
        assert r.windows("given_up") == 0
        assert (
            r.metrics.registry.get_sample_value("cdnvideo_traffic_windows_owed", {"account": ACC})
            == 0
        )
        assert sum(end - start for start, end, _, _ in told.runs) == sum(
            run.minutes * 60 for run in owed
        )
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0


async def test_settling_switched_off_across_a_restart_finishes_the_schedule_owed(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Pinned ``settle_off_across_restart`` (issue 48 failure 1): one last read 5 minutes
    after a run's first read came before its figures were final, and nothing named it."""
    await _switched_off(aiohttp_server, tmp_path, file_says_schedule=True)


async def test_settling_switched_off_with_a_file_of_an_earlier_release_reads_once_more(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    await _switched_off(aiohttp_server, tmp_path, file_says_schedule=False)


async def test_minutes_owed_when_an_account_moves_to_another_replica_are_named(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """An account moved to another shard while runs are owed a settle read: nobody reads them
    any more (the replica taking the account over reads on from its newest minute), so their
    minutes are counted as ``released`` and logged before the account's series go (a departed
    account leaves no series behind); none is left owed nor dropped untold."""
    reason: Release = MOVED
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[5, 15, 60])
        poller.accounts.serve([ACC])
        await r.drive(poller, 45 * 60)
        owed = sum(run.minutes for run in poller.accounts.ledger(ACC).pending)
        assert owed >= 40
        with capture_logs() as logs:
            poller.accounts.serve([])
        assert poller.accounts.ledger(ACC).pending == []
        assert r.windows("released") == owed
        (line,) = [e for e in logs if e["event"] == "traffic_settle_released"]
        assert (line["minutes"], line["reason"]) == (owed, reason)
        r.metrics.forget_account(ACC)  # the service forgets the account's series, all of them
        assert r.windows("released") == 0
        assert r.windows("read") == 0


async def test_minutes_owed_when_an_account_leaves_the_list_are_read_when_it_comes_back(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """An account removed from the config (or no longer listed by discovery) while runs are
    owed a settle read keeps them with its ledger: back 20 minutes later, they are read (the
    overdue ones at once) and every counter equals the platform's final figures; nothing is
    released, given up or missed."""
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, CONFIG) as r:
        poller = r.poller(state_file=state_file, revisit_minutes=[5, 15, 60])
        poller.accounts.serve([ACC])
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 45 * 60)
        owed = sum(run.minutes for run in poller.accounts.ledger(ACC).pending)
        assert owed >= 40
        with capture_logs() as logs:
            poller.accounts.forget(ACC, REMOVED)
        assert sum(run.minutes for run in poller.accounts.ledger(ACC).pending) == owed
        (line,) = [e for e in logs if e["event"] == "traffic_settle_kept"]
        assert (line["minutes"], line["reason"]) == (owed, REMOVED)
        r.clock.advance(20 * 60)
        poller.accounts.serve([ACC])
        await r.drive(poller, 65 * 60)
        assert (r.windows("released"), r.windows("given_up"), r.windows("missed")) == (0, 0, 0)
        drained = await drain(r, state_file, revisit_minutes=[5, 15, 60])
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert assert_counters_equal_truth(r, range(first, cursor + 60, 60)) > 0
