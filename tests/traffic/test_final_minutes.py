"""The poller's hook for outputs of final figures (remote write), against the simulator with
late data and a restart: every minute is told once, after its last settle read, as one-minute
runs holding the simulator's final figures for that minute."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from exporter.simulator import SimConfig
from exporter.traffic import TrafficPoller
from exporter.traffic.final import tell
from exporter.traffic.parse import COUNT_INDEX, COUNT_KEYS, blank
from exporter.traffic.runs import Run
from exporter.upstream.errors import UpstreamError
from tests.traffic.test_against_simulator import ACC, Rig, ServerFactory, rig

LATE = SimConfig(late_seconds=480, late_half_seconds=60, resources_per_account=3)
SCHEDULE = [2, 10]  # the last read comes after the simulator's 8 minutes of late data


@dataclass
class Told:
    runs: list[tuple[int, int, dict[str, float], dict[str, dict[str, float]]]] = field(
        default_factory=list
    )

    def final(
        self,
        account: str,
        start: int,
        end: int,
        totals: Mapping[str, float],
        resources: Mapping[str, Mapping[str, float]],
    ) -> None:
        assert account == ACC
        self.runs.append((start, end, dict(totals), {r: dict(v) for r, v in resources.items()}))


def poller(r: Rig, state_file: str, told: Told | None, **settings: object) -> TrafficPoller:
    p = r.poller(state_file=state_file, revisit_minutes=SCHEDULE, **settings)
    p.reader.final_minutes = told
    return p


def truth(r: Rig, minute: int, resource: str | None = None) -> dict[str, float]:
    final = r.sim.traffic_truth(ACC, minute, resource)
    return {k: float(final[k]) for k in COUNT_KEYS if k in final}


async def test_each_minute_is_told_once_with_its_final_figures_across_a_restart(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    told = Told()
    async with rig(aiohttp_server, LATE) as r:
        p = poller(r, state_file, told)
        await r.drive(p, 12 * 60)
        p = poller(r, state_file, told)  # a restart from the state file
        await r.drive(p, 8 * 60)
        cursor = p.accounts.ledger(ACC).cursor
        p = poller(r, state_file, told, delay_seconds=86_400)  # no new minute: drain the rest
        for _ in range(200):
            if not p.accounts.ledger(ACC).pending:
                break
            await p.poll(ACC)
            r.clock.advance(15)
        assert p.accounts.ledger(ACC).pending == []
        assert cursor is not None

        starts = [start for start, _, _, _ in told.runs]
        assert len(starts) == len(set(starts))  # none told twice
        first = min(starts)
        assert sorted(starts) == list(range(first, cursor + 60, 60))  # none left out
        assert len(starts) >= 15
        for start, end, totals, resources in told.runs:
            assert end == start + 60  # one-minute runs while an output is set
            assert totals == truth(r, start)
            for res in r.sim.resources(ACC):
                assert resources[res.id] == truth(r, start, res.id)


async def test_a_run_caught_up_in_one_window_is_told_minute_by_minute_after_its_pieces(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Minutes first read together after a downtime (one catch-up window), then settled in
    pieces once the platform times long windows out: each minute is told with its own final
    figures, not the window's sum spread evenly."""
    state_file = str(tmp_path / "traffic.json")
    told = Told()
    async with rig(aiohttp_server, LATE) as r:
        p = poller(r, state_file, told)
        await r.drive(p, 4 * 60)
        cursor = p.accounts.ledger(ACC).cursor
        assert cursor is not None
        r.clock.advance(6 * 60)  # down for 6 minutes
        p = poller(r, state_file, told)
        await p.poll(ACC)  # the catch-up: one window of the minutes missed meanwhile
        caught = [run for run in p.accounts.ledger(ACC).pending if run.start >= cursor]
        assert max(run.minutes for run in caught) >= 5
        r.sim.set_quirks(["slow-long-windows"])  # the platform now times longer windows out
        p = poller(r, state_file, told, delay_seconds=86_400)  # no new minute: drain the rest
        timeouts = 0
        for _ in range(400):
            if not p.accounts.ledger(ACC).pending:
                break
            try:
                await p.poll(ACC)
            except UpstreamError:
                timeouts += 1  # a long window timed out: read in pieces from then on
            r.clock.advance(15)
        assert timeouts >= 1
        assert p.accounts.ledger(ACC).pending == []

        after = [t for t in told.runs if t[0] >= cursor]
        assert len(after) >= 5
        for start, end, totals, resources in after:
            assert end == start + 60
            assert totals == truth(r, start)
            for res in r.sim.resources(ACC):
                assert resources[res.id] == truth(r, start, res.id)


async def test_without_an_output_runs_still_merge_up_to_the_revisit(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    async with rig(aiohttp_server, LATE) as r:
        p = poller(r, str(tmp_path / "traffic.json"), None)
        await r.drive(p, 8 * 60)
        assert max(run.minutes for run in p.accounts.ledger(ACC).pending) > 1  # merged windows


def test_resources_folded_in_the_run_are_told_summed_under_other() -> None:
    def values(requests: float) -> array[float]:
        v = blank()
        v[COUNT_INDEX["edge_requests_total"]] = requests
        return v

    run = Run(60, 120, 0.0, values(10.0), folded=frozenset({"b", "c"}))
    run.resources = {"a": values(5.0), "b": values(3.0), "c": values(2.0)}
    told = Told()
    tell(told, ACC, run)
    assert told.runs == [
        (
            60,
            120,
            {"edge_requests_total": 10.0},
            {"a": {"edge_requests_total": 5.0}, "__other__": {"edge_requests_total": 5.0}},
        )
    ]


async def test_with_settling_off_each_first_read_is_told_at_once(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    told = Told()
    async with rig(aiohttp_server, SimConfig(late_seconds=0, resources_per_account=2)) as r:
        p = r.poller(state_file=str(tmp_path / "traffic.json"), revisit_minutes=0)
        p.reader.final_minutes = told
        await r.drive(p, 5 * 60)
        starts = [start for start, _, _, _ in told.runs]
        assert len(starts) >= 4
        assert starts == list(range(starts[0], starts[0] + 60 * len(starts), 60))
        for start, end, totals, resources in told.runs:
            assert end == start + 60
            assert totals == truth(r, start)
            assert set(resources) == {res.id for res in r.sim.resources(ACC)}
