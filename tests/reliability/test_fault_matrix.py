"""The fault matrix: every area x every fault against the simulator over real HTTP.

One FakeClock drives the simulator and the daemon (``create_app`` without its timers); each
round of polls runs every job at once through the Service, as the scheduler would. See
``matrix.py`` for the table and docs/reliability.md for what it shows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from exporter.dvr.poller import STALE_AFTER_INTERVALS as DVR_STALE
from exporter.restream.poller import STALE_AFTER_INTERVALS as RESTREAM_STALE
from exporter.simulator import SimRunner, Simulator
from exporter.support.clock import FakeClock
from exporter.talking_head.poller import STALE_AFTER_INTERVALS as TH_STALE
from exporter.traffic.persist import FRAGMENT_MAX_AGE_SECONDS
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.traffic.windows import last_ready_minute
from exporter.upstream.auth import RENEW_AT_FRACTION
from tests.simulator.hold import Hold

from .leaks import LeakGuard
from .matrix import ADMIN_STATUS, AUTH_OUTAGE, CASES, OUTAGE, REJECTED, RENEWED, Case
from .rig import (
    ACCOUNTS,
    INTERVALS,
    READ_TOKEN,
    T0,
    TICK,
    TOKEN_LIFETIME,
    Daemon,
    Labels,
    Scrape,
    assert_traffic_exact,
    family,
    settings,
    start_daemon,
    start_simulator,
)

POLLED = ("traffic", "restream", "dvr", "talking_head")
TOKEN_PATH = "/app/oauth/v1/token/"

# Per area: (sample whose series the area exports, how long its fragment stays exported).
EXPORTS: dict[str, tuple[tuple[str, float], ...]] = {
    "traffic": (("cdnvideo_account_requests_total", FRAGMENT_MAX_AGE_SECONDS),),
    "restream": (
        ("cdnvideo_restream_status_code", RESTREAM_STALE * INTERVALS["restream"]),
        (
            "cdnvideo_restream_status_changed_timestamp_seconds",
            RESTREAM_STALE * INTERVALS["history"],
        ),
    ),
    "dvr": (("cdnvideo_dvr_alive", DVR_STALE * INTERVALS["dvr"]),),
    "talking_head": (("cdnvideo_talking_head_quota_left", TH_STALE * INTERVALS["talking_head"]),),
    "auth": (),
}
# An admin read that goes upstream in the area (secrets in its answer must come back masked).
ADMIN_READ = {
    "restream": "/api/v1/restream/{account}/status",
    "dvr": "/api/v1/dvr/{account}/streams/live/main",
    "talking_head": "/api/v1/talking-head/{account}/configurations",
}


@dataclass
class Rig:
    sim: Simulator
    sim_runner: SimRunner
    clock: FakeClock
    guard: LeakGuard
    state_file: Path
    hold: Hold
    daemon: Daemon | None = None
    first: dict[str, int] = field(default_factory=dict)  # first accounted minute per account

    @property
    def d(self) -> Daemon:
        assert self.daemon is not None
        return self.daemon

    async def start(self) -> Daemon:
        conf = settings(self.sim_runner.base_url, self.state_file)
        self.daemon = await start_daemon(conf, self.clock, self.guard)
        return self.daemon

    async def restart(self) -> Daemon:
        await self.d.stop()
        return await self.start()

    async def round(self, areas: tuple[str, ...] | None = None) -> dict[str, set[bool]]:
        """One round of polls; area -> the outcomes of its jobs over both accounts."""
        results = await self.d.poll(areas)
        out: dict[str, set[bool]] = {}
        for (area, _, _), ok in results.items():
            out.setdefault(area, set()).add(ok)
        return out

    async def warm_up(self) -> Scrape:
        """Two healthy rounds; remembers the first traffic minute of each account."""
        assert await self.round() == {a: {True} for a in (*POLLED, "auth")}
        first = await self.d.scrape()
        for account in ACCOUNTS:
            end = first.value("cdnvideo_account_window_end_timestamp_seconds", account=account)
            assert end is not None
            self.first[account] = int(end) - 60
        self.clock.advance(TICK)
        assert await self.round() == {a: {True} for a in (*POLLED, "auth")}
        return await self.d.scrape()

    def logins(self) -> int:
        return len(self.sim.requests.find(method="POST", path=TOKEN_PATH))

    def last_login_at(self) -> float:
        return self.sim.requests.find(method="POST", path=TOKEN_PATH)[-1].time


@pytest.fixture
async def rig(leak_guard: LeakGuard, tmp_path: Path) -> AsyncIterator[Rig]:
    clock = FakeClock(T0)
    hold = Hold()
    sim, runner = await start_simulator(clock, leak_guard, hold)
    r = Rig(sim, runner, clock, leak_guard, tmp_path / "traffic-state.json", hold)
    await r.start()
    try:
        yield r
    finally:
        if r.daemon is not None:
            await r.daemon.stop()
        await runner.cleanup()


def exported(scrape: Scrape, area: str) -> dict[str, dict[str, dict[Labels, float]]]:
    """The area's sample series per account, by sample name."""
    return {
        account: {name: family(scrape.samples, name, account=account) for name, _ in EXPORTS[area]}
        for account in ACCOUNTS
    }


def assert_up(scrape: Scrape, down: set[str]) -> None:
    for area in (*POLLED, "auth"):
        accounts = ("",) if area == "auth" else ACCOUNTS
        for account in accounts:
            want = 0.0 if area in down else 1.0
            assert scrape.up(area, account) == want, (area, account)


async def poll_during_scrape(r: Rig, area: str) -> tuple[dict[str, set[bool]], Scrape]:
    """A round of polls with a scrape of /metrics taken while the failing area's request is
    held at the simulator: the scrape is answered while the upstream still hangs."""
    r.hold.arm(area)
    polls = asyncio.create_task(r.round())
    try:
        await r.hold.arrived()
        during = await r.d.scrape(render=False)
        in_flight = not polls.done()
    finally:
        r.hold.release()
    outcomes = await polls
    assert in_flight, "the round of polls ended before the scrape was answered"
    return outcomes, during


async def admin_reads(r: Rig, area: str) -> list[int]:
    """Admin reads of the area: answered (not hung), statuses returned for the record."""
    path = ADMIN_READ.get(area)
    if path is None:
        return []
    reads = [r.d.get(path.format(account=account), READ_TOKEN) for account in ACCOUNTS]
    answers = await asyncio.wait_for(asyncio.gather(*reads), timeout=5)
    return [status for status, _ in answers]


# --- scenarios -------------------------------------------------------------------------------
async def outage(r: Rig, case: Case) -> None:
    """The area's upstream fails until cleared; the rest of the platform is fine."""
    before = await r.warm_up()
    good = exported(before, case.area)
    assert all(series for per in good.values() for series in per.values()), good
    assert await admin_reads(r, case.area) in ([], [200, 200])
    last_good = r.clock.time()

    r.sim.faults.set(case.area, case.fault)
    r.clock.advance(TICK)
    outcomes, during = await poll_during_scrape(r, case.area)
    assert during.status == 200
    assert outcomes == {a: {a != case.area} for a in (*POLLED, "auth")}
    after = await r.d.scrape()
    assert_up(after, {case.area})
    assert exported(after, case.area) == good  # the last good values stay
    assert (await r.d.get("/healthz"))[0] == 200
    assert await admin_reads(r, case.area) in ([], [ADMIN_STATUS[case.fault]] * 2)

    for name, max_age in sorted(EXPORTS[case.area], key=lambda e: e[1]):
        r.clock.set(last_good + max_age - 1)
        still = exported(await r.d.scrape(), case.area)
        assert all(still[a][name] == good[a][name] for a in ACCOUNTS), name
        r.clock.set(last_good + max_age + 1)
        gone = exported(await r.d.scrape(), case.area)
        assert all(gone[a][name] == {} for a in ACCOUNTS), name  # aged out

    r.sim.faults.clear()
    r.clock.advance(TICK)
    assert await r.round() == {a: {True} for a in (*POLLED, "auth")}
    recovered = await r.d.scrape()
    assert_up(recovered, set())
    assert all(series for per in exported(recovered, case.area).values() for series in per.values())
    assert_backfilled(r, recovered)


def assert_backfilled(r: Rig, scrape: Scrape) -> None:
    """Every ready minute is accounted (the gap was read back, none given up), and every
    counter equals the simulator's truth over those minutes."""
    ready = last_ready_minute(r.clock.time(), TRAFFIC_SECTION.of(r.d.ctx.settings).delay_seconds)
    for account in ACCOUNTS:
        windows = "cdnvideo_traffic_windows_total"
        assert (scrape.value(windows, account=account, outcome="backfilled") or 0) >= 1
        assert (scrape.value(windows, account=account, outcome="missed") or 0) == 0
        end = scrape.value("cdnvideo_account_window_end_timestamp_seconds", account=account)
        assert end == ready + 60, account
    assert assert_traffic_exact(r.sim, scrape, r.first) >= 3


async def auth_outage(r: Rig, case: Case) -> None:
    """The token endpoint fails from the moment a renewal is due until after the token expired."""
    before = await r.warm_up()
    login_at = r.last_login_at()
    r.clock.set(login_at + RENEW_AT_FRACTION * TOKEN_LIFETIME + 1)
    r.sim.faults.set("auth", case.fault)
    logins = r.logins()

    outcomes, during = await poll_during_scrape(r, "auth")
    assert during.status == 200
    assert outcomes == {a: {a != "auth"} for a in (*POLLED, "auth")}
    assert_up(await r.d.scrape(), {"auth"})

    r.clock.set(login_at + TOKEN_LIFETIME + 1)  # the old token is expired now
    outcomes, during = await poll_during_scrape(r, "auth")
    assert during.status == 200
    assert outcomes == {a: {False} for a in (*POLLED, "auth")}
    after = await r.d.scrape()
    assert_up(after, {*POLLED, "auth"})
    for area in POLLED:
        assert all(v for per in exported(after, area).values() for v in per.values()), area
    assert r.logins() - logins <= 2  # at most one login per round, never a loop

    r.sim.faults.clear()
    r.clock.advance(TICK)
    assert await r.round() == {a: {True} for a in (*POLLED, "auth")}
    recovered = await r.d.scrape()
    assert_up(recovered, set())
    assert_backfilled(r, recovered)
    assert before.samples


async def renewed(r: Rig, case: Case) -> None:
    """Every issued token expires at once; the area (or all of them, for auth) polls next."""
    await r.warm_up()
    r.clock.advance(TICK)
    r.sim.expire_tokens()
    logins = r.logins()
    first = POLLED if case.area == "auth" else (case.area,)
    outcomes = await r.round(first)
    assert outcomes == {a: {True} for a in first}
    assert r.logins() == logins + 1
    assert await r.round() == {a: {True} for a in (*POLLED, "auth")}
    assert r.logins() == logins + 1  # one renewal served every area
    assert await admin_reads(r, case.area) in ([], [ADMIN_STATUS[case.fault]] * 2)
    after = await r.d.scrape()
    assert_up(after, set())
    assert assert_traffic_exact(r.sim, after, r.first) >= 1


async def rejected(r: Rig, case: Case) -> None:
    """A new token is needed and the token endpoint refuses the password."""
    before = await r.warm_up()
    if case.area == "auth":  # a renewal falls due (the token itself is still valid)
        login_at = r.last_login_at()
        r.clock.set(login_at + RENEW_AT_FRACTION * TOKEN_LIFETIME + 1)
        r.sim.faults.set("auth", "refuse_password")
        outcomes = await r.round()
        assert outcomes == {a: {a != "auth"} for a in (*POLLED, "auth")}
        assert r.sim.auth.failed_logins == 1
        before = await r.d.scrape()  # the areas went on with the still valid token
        r.clock.set(login_at + TOKEN_LIFETIME + 1)
    else:
        r.clock.advance(TICK)
        r.sim.expire_tokens()
        r.sim.faults.set("auth", "refuse_password")
        assert await r.round((case.area,)) == {case.area: {False}}
        assert r.sim.auth.failed_logins == 1
    assert await r.round() == {a: {False} for a in (*POLLED, "auth")}
    r.sim.faults.clear()
    r.clock.advance(TICK)
    assert await r.round() == {a: {False} for a in (*POLLED, "auth")}
    assert r.sim.auth.failed_logins == 1  # never tried again: seven would lock the login
    assert await admin_reads(r, case.area) in ([], [ADMIN_STATUS[case.fault]] * 2)
    down = await r.d.scrape()
    assert_up(down, {*POLLED, "auth"})
    for area in POLLED:
        assert exported(down, area) == exported(before, area), area

    await r.restart()  # with the password fixed (here: the fault cleared) and the state file
    r.clock.advance(TICK)
    assert await r.round() == {a: {True} for a in (*POLLED, "auth")}
    after = await r.d.scrape()
    assert_up(after, set())
    assert assert_traffic_exact(r.sim, after, r.first) >= 3


SCENARIOS = {OUTAGE: outage, AUTH_OUTAGE: auth_outage, RENEWED: renewed, REJECTED: rejected}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_fault_matrix(rig: Rig, case: Case) -> None:
    await SCENARIOS[case.scenario](rig, case)
