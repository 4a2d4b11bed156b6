"""Soak: one simulated day (1440 minutes on a FakeClock, no real waiting) with resources and
DVR nodes coming and going. The simulator runs in its own process (simproc.py), so the memory
traced here is the exporter's: it must stay flat once the first hours have filled its caches,
series of vanished things must leave /metrics, and the counters must end exact.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from exporter.exposition.deflate import clear_caches
from exporter.simulator import Simulator
from exporter.support.clock import FakeClock

from .leaks import LeakGuard, ScanningLog
from .procs import SimProcess
from .rig import (
    ACCOUNTS,
    STATIC_TOKEN,
    Daemon,
    Scrape,
    exported_counters,
    settings,
    sim_config,
    start_daemon,
    truth,
)

DAY0 = 1_767_312_000 + 5  # 2026-01-02T00:00:05Z
WINDOW_END = "cdnvideo_account_window_end_timestamp_seconds"
HOUR = 3600
RESOURCES = 6
STEP = 5  # minutes between two rounds of polls
# Every area polls every 5 minutes (traffic then reads 5-minute windows), history every
# 30 minutes, talking-head hourly.
INTERVALS = {
    "traffic": 300,
    "restream": 300,
    "history": 1800,
    "dvr": 300,
    "talking_head": 3600,
}
SIM_ARGS = (
    "--accounts", ",".join(ACCOUNTS), "--token", STATIC_TOKEN,
    "--resources-per-account", str(RESOURCES), "--late-seconds", "90",
)  # fmt: skip
# What comes and goes (hours after DAY0).
GONE = ("demo-media", "100006")  # deleted at 06:00
NEW = ("demo-shop", "200006")  # created at 08:00
FLAP = ("demo-media", "100005")  # away 12:00-14:00
HIDDEN_NODE = ("dvr-msk-2", 3, 5)  # left out of replies 03:00-05:00
DEAD_NODE = ("dvr-spb-1", 10, 11)  # not alive 10:00-11:00
# Bounds (tracemalloc, bytes): what one day may add after the first two hours, and the peak.
# Measured: about +0.1 MB over the 22 hours after the first two, peak about 6 MB.
GROWTH_BOUND = 1_000_000
PEAK_BOUND = 16_000_000


@dataclass
class Day:
    sim: SimProcess
    daemon: Daemon
    clock: FakeClock
    log: ScanningLog
    state_file: Path

    async def tick(self, t: float) -> None:
        """Move both clocks to ``t`` and run every job that falls due, as the scheduler would."""
        self.clock.set(t)
        await self.sim.set_clock(t)
        since = int(t - DAY0)
        runs, names = [], []
        for account in ACCOUNTS:
            for job in self.daemon.service.jobs(account):
                if since % INTERVALS[job.name or job.area] < STEP * 60:
                    runs.append(self.daemon.ctx.runner.run(job.area, account, job.poll, job.name))
                    names.append((job.area, account, job.name))
        results = await asyncio.gather(*runs)
        assert all(results), [n for n, ok in zip(names, results, strict=True) if not ok]

    async def events(self, hour: int, t: float, back: dict[str, float]) -> None:
        """What comes and goes at the top of ``hour``."""
        host, gone_at, back_at = HIDDEN_NODE
        if hour in (gone_at, back_at):
            await self.node(host, hidden=hour == gone_at)
        host, gone_at, back_at = DEAD_NODE
        if hour in (gone_at, back_at):
            await self.node(host, alive=hour == back_at)
        if hour == 6:
            await self.hide(*GONE)
        if hour == 8:
            await self.hide(NEW[0])
            back["new"] = t
        if hour == 12:  # (the hidden set is replaced as a whole: GONE stays gone)
            await self.hide(*FLAP, GONE[1])
        if hour == 14:
            await self.hide(FLAP[0], GONE[1])
            back["flap"] = t

    async def hide(self, account: str, *resources: str) -> None:
        await self.sim.call(
            "POST", "/_simproc/resources", {"account": account, "hidden": list(resources)}
        )

    async def node(self, host: str, **switches: bool) -> None:
        await self.sim.call("POST", f"/_sim/dvr/nodes/{host}", switches)

    async def drain(self) -> Scrape:
        """Restart reading no new minute (delay of a day) until every run has been settled."""
        guard = self.daemon.guard
        await self.daemon.stop()
        conf = soak_settings(self.sim.url, self.state_file, delay_seconds=86_400)
        self.daemon = await start_daemon(conf, self.clock, guard)
        traffic = self.daemon.service.areas.traffic.poller
        t = self.clock.time()
        for _ in range(20):
            if not any(traffic.accounts.ledger(a).pending for a in ACCOUNTS):
                break
            t += 60
            self.clock.set(t)
            await self.sim.set_clock(t)
            for account in ACCOUNTS:
                await traffic.poll(account)
        assert not any(traffic.accounts.ledger(a).pending for a in ACCOUNTS)
        return await self.daemon.scrape()


def resource_ids(scrape: Scrape, account: str) -> set[str]:
    return {
        dict(labels)["resource"]
        for (name, labels) in scrape.samples
        # gauges: they leave with the resource (counters stay for series_retention_hours)
        if name == "cdnvideo_resource_requests_per_second" and dict(labels)["account"] == account
    }


def dvr_hosts(scrape: Scrape) -> dict[str, set[float]]:
    """cdnvideo_dvr_alive values by host (over accounts and streams)."""
    out: dict[str, set[float]] = {}
    for (name, labels), v in scrape.samples.items():
        if name == "cdnvideo_dvr_alive":
            out.setdefault(dict(labels)["host"], set()).add(v)
    return out


def soak_settings(url: str, state_file: Path, **traffic: Any) -> Any:
    return settings(
        url,
        state_file,
        login=False,
        # Read minutes before their figures are final (late_seconds 90): settles add the rest.
        traffic={"delay_seconds": 60, **traffic},
        restream={
            "interval_seconds": INTERVALS["restream"],
            "history_interval_seconds": INTERVALS["history"],
        },
        dvr={"interval_seconds": INTERVALS["dvr"]},
        talking_head={"interval_seconds": INTERVALS["talking_head"]},
        log={"level": "info"},
    )


@pytest.fixture
async def day(leak_guard: LeakGuard, tmp_path: Path) -> AsyncIterator[Day]:
    clock = FakeClock(DAY0)
    sim = await SimProcess.start(DAY0, SIM_ARGS)
    log = ScanningLog(leak_guard)
    leak_guard.log = log  # the daemon's log is scanned as written, not kept
    conf = soak_settings(sim.url, tmp_path / "state.json")
    daemon = await start_daemon(conf, clock, leak_guard)
    daemon.keep_outputs = False
    d = Day(sim, daemon, clock, log, tmp_path / "state.json")
    try:
        yield d
    finally:
        await d.daemon.stop()
        await sim.stop()


async def test_a_day_of_coming_and_going_stays_bounded_and_exact(day: Day) -> None:
    await day.hide(*NEW)
    ids: dict[int, dict[str, set[str]]] = {}
    hosts: dict[int, dict[str, set[float]]] = {}
    back: dict[str, float] = {}  # when a resource came back
    gc.collect()
    tracemalloc.start()
    marks: dict[str, int] = {}
    for i in range(0, 1440, STEP):
        t = DAY0 + 60 * i
        hour, minute = divmod(i, 60)
        if minute == 0:
            await day.events(hour, t, back)
        await day.tick(t)
        if i == 0:
            start = await day.daemon.scrape()
            first = {  # a fresh exporter reads the newest ready minute only
                a: int(start.value(WINDOW_END, account=a) or 0) - 60 for a in ACCOUNTS
            }
        if minute == 30:
            seen = await day.daemon.scrape()
            ids[hour] = {a: resource_ids(seen, a) for a in ACCOUNTS}
            hosts[hour] = dvr_hosts(seen)
            del seen
        if i == 120:
            clear_caches()  # bounded caches (8192 + 4096 entries), not growth of state
            gc.collect()
            marks["after 2 h"] = tracemalloc.get_traced_memory()[0]
    clear_caches()
    gc.collect()
    marks["after 24 h"], peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"soak memory: {marks}, peak {peak}; log events {day.log.events}")
    assert marks["after 24 h"] - marks["after 2 h"] < GROWTH_BOUND, marks
    assert peak < PEAK_BOUND, peak

    # Vanished things left /metrics, and came back when they came back.
    assert GONE[1] in ids[5][GONE[0]]
    assert all(GONE[1] not in ids[h][GONE[0]] for h in range(7, 24))
    assert all(NEW[1] not in ids[h][NEW[0]] for h in range(0, 8))
    assert all(NEW[1] in ids[h][NEW[0]] for h in range(8, 24))
    assert FLAP[1] not in ids[13][FLAP[0]]
    assert FLAP[1] in ids[15][FLAP[0]]
    assert HIDDEN_NODE[0] in hosts[2]
    assert HIDDEN_NODE[0] not in hosts[4]
    assert HIDDEN_NODE[0] in hosts[6]
    assert hosts[10][DEAD_NODE[0]] == {0.0}
    assert hosts[12][DEAD_NODE[0]] == {1.0}

    # Counters: drain the unsettled minutes (a restart that reads no new minute), then compare.
    last = await day.daemon.scrape()  # (the drained restart has no window of its own)
    ends = {a: int(last.value(WINDOW_END, account=a) or 0) for a in ACCOUNTS}
    final = await day.drain()
    local = Simulator(sim_config(accounts=ACCOUNTS, resources_per_account=RESOURCES))
    for account in ACCOUNTS:
        span = range(first[account], ends[account], 60)
        assert len(span) > 1430
        assert exported_counters(final.samples, account) == truth(local, account, span)
        for res in local.resources(account):
            if (account, res.id) in (GONE, NEW, FLAP):
                continue
            labels = {"resource": res.id}  # counters carry no names (cdnvideo_resource_info)
            got = exported_counters(final.samples, account, labels)
            assert got == truth(local, account, span, res.id), res.id
    # A new resource counts from its first window, plus what settle reads of earlier windows
    # found; one that came back within series_retention_hours continues its counter.
    for key, (account, rid) in (("new", NEW), ("flap", FLAP)):
        got = exported_counters(final.samples, account, {"resource": rid})["edge_requests_total"]
        last = int(back[key] - 120) // 60 * 60  # the newest minute read on its return
        lower = truth(local, account, range(last, ends[account], 60), rid)
        since = first[account] if key == "flap" else last - 900
        upper = truth(local, account, range(since, ends[account], 60), rid)
        assert lower["edge_requests_total"] <= (got or 0) <= upper["edge_requests_total"], key
