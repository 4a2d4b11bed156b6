"""Restart safety with real processes: ``python -m exporter run`` against simproc.py.

Both processes share one clock (simproc's ``--clock-file``; the exporter gets the same offset
through ``shifted_clock/sitecustomize.py``), so a test jumps minutes ahead in a millisecond
while timers and timeouts run in real time. Counters are compared with the simulator's truth
fetched from ``GET /_sim/traffic``.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.traffic.windows import last_ready_minute

from .leaks import LeakGuard
from .procs import PYTHON, ROOT, ExporterProcess, SimProcess, child_env, free_port
from .rig import T0, Samples, exported_counters

# The exporter polls on its grid in real time (15 s): the tests wait more than they work, so
# they run beside the rest of the suite (``make test``'s realtime run).
pytestmark = pytest.mark.realtime

# Accounts whose traffic grid starts in the first 0.1 s after start (the scheduler spreads
# the grids over 10 s by a stable hash of the account; every first run is at once), so a
# restarted exporter polls on at once.
ACCOUNTS = ("acme-98", "acme-118")
TOKEN = "proc-SECRET-token-4d2a"
WINDOW_END = "cdnvideo_account_window_end_timestamp_seconds"
SAFETY_SECONDS = 60  # only a broken build waits so long: the test fails instead of hanging
DELAY = 60  # traffic.delay_seconds; the simulator's figures are final 30 s after a minute
SIM_ARGS = (
    "--accounts", ",".join(ACCOUNTS), "--token", TOKEN, "--late-seconds", "30",
    "--resources-per-account", "3",
)  # fmt: skip


@dataclass
class World:
    sim: SimProcess
    tmp: Path
    guard: LeakGuard
    port: int = field(default_factory=free_port)
    running: list[ExporterProcess] = field(default_factory=list)
    first: dict[str, int] = field(default_factory=dict)

    @property
    def listen(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def state(self) -> Path:
        return self.tmp / "state.json"

    @property
    def clock_file(self) -> Path:
        return self.tmp / "clock"

    def config(self, **traffic: Any) -> Path:
        path = self.tmp / "config.yml"
        doc = {
            "upstream": {"base_url": self.sim.url, "token": TOKEN, "timeout_seconds": 5},
            "accounts": [{"name": a} for a in ACCOUNTS],
            "traffic": {
                "delay_seconds": DELAY,
                "revisit_minutes": 5,
                "catch_up_minutes": 240,
                "state_file": str(self.state),
                **traffic,
            },
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
            "listen": self.listen,
            "log": {"level": "debug", "format": "json"},
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    async def exporter(self, **traffic: Any) -> ExporterProcess:
        config = self.config(**traffic)
        exp = await ExporterProcess.start(
            config, self.listen, self.tmp / "exporter.log", self.clock_file, self.guard
        )
        self.running.append(exp)
        return exp

    async def caught_up(self, exp: ExporterProcess) -> dict[str, int]:
        """Wait until every account has read the last minute that was ready when called."""
        want = last_ready_minute(await self.sim.now(), DELAY) + 60

        async def done() -> dict[str, int] | None:
            samples = await exp.scrape()  # one scrape for every account
            ends = {a: samples.get((WINDOW_END, (("account", a),))) for a in ACCOUNTS}
            if all(e is not None and e >= want for e in ends.values()):
                return {a: int(e) for a, e in ends.items() if e is not None}
            return None

        got: dict[str, int] = await exp.wait_for(done, f"traffic read up to {want}", every=0.25)
        return got

    async def counted(self, exp: ExporterProcess) -> None:
        """Wait until every account's new counters show their count (a new series is shown
        at 0 on its first refresh)."""

        async def done() -> bool:
            samples = await exp.scrape()
            key = "cdnvideo_account_requests_total"
            return all(samples.get((key, (("account", a), ("side", "edge")))) for a in ACCOUNTS)

        await exp.wait_for(done, "counters shown", every=0.25)

    async def assert_exact(self, exp: ExporterProcess) -> int:
        """Every counter equals /_sim/traffic summed over the minutes accounted since ``first``."""
        samples = await exp.scrape()
        minutes = 0
        for account in ACCOUNTS:
            end = samples[
                ("cdnvideo_account_window_end_timestamp_seconds", (("account", account),))
            ]
            span = range(self.first[account], int(end), 60)
            assert exported_counters(samples, account) == await self.sim.truth(account, span)
            for labels in resources(samples, account):
                want = await self.sim.truth(account, span, labels["resource"])
                got = exported_counters(samples, account, {"resource": labels["resource"]})
                assert got == want, labels
            minutes = len(span)
        return minutes

    def saved_cursors(self) -> dict[str, int]:
        doc = json.loads(self.state.read_bytes())
        return {a: doc["accounts"][a]["cursor"] for a in ACCOUNTS}


def resources(samples: Samples, account: str) -> list[dict[str, str]]:
    """Label sets (resource, resource_name, cname) of the account's exported resources."""
    found = []
    for name, labels in samples:
        d = dict(labels)
        if name == "cdnvideo_resource_info" and d["account"] == account:
            found.append({k: d[k] for k in ("resource", "resource_name", "cname")})
    assert len(found) == 3, found
    return found


@pytest.fixture
async def w(tmp_path: Path, leak_guard: LeakGuard) -> AsyncIterator[World]:
    leak_guard.secret(TOKEN)
    sim = await SimProcess.start(T0, SIM_ARGS, clock_file=tmp_path / "clock")
    w = World(sim, tmp_path, leak_guard)
    try:
        yield w
    finally:
        for exp in w.running:
            await exp.stop()
        await sim.stop()
        log = tmp_path / "exporter.log"
        if log.exists():
            leak_guard.add("exporter process log", log.read_text(errors="replace"))


async def start_fresh(w: World) -> ExporterProcess:
    exp = await w.exporter()
    ends = await w.caught_up(exp)
    w.first = {a: e - 60 for a, e in ends.items()}  # a fresh cursor reads the newest minute only
    return exp


async def requests_for(w: World, account: str) -> int:
    return sum(1 for r in await w.sim.requests("traffic") if ["account", account] in r["query"])


async def test_sigkill_during_refreshes_loses_and_doubles_no_minute(w: World) -> None:
    exp = await start_fresh(w)
    exp.kill()
    rng = random.Random(20260101)
    # Each restart has 25 minutes to read, in windows of 10 + 10 + 5 whose requests are
    # answered after 0.4 s each, then settle reads, then the save. Kill points (seconds after
    # the refresh's first request): inside the first window, after the first window was
    # counted (not saved), right after the save, and anywhere.
    plans: list[float | None] = [0.1, 0.6, None, rng.uniform(0.0, 2.5)]
    progress = []
    for plan in plans:
        await w.sim.fault("traffic", "slow", delay=0.4)
        await w.sim.advance(25 * 60)
        seen = len(await w.sim.requests("traffic"))
        before = w.saved_cursors()
        exp = await w.exporter()
        await exp.wait_for(lambda: _more(w, seen), "the refresh to start")  # noqa: B023
        if plan is None:
            await exp.wait_for(lambda: _advanced(w, before), "the save")  # noqa: B023
        else:
            await asyncio.sleep(plan)
        exp.kill()
        assert exp.proc.returncode == -signal.SIGKILL
        progress.append(w.saved_cursors() != before)  # and the file is whole: old or new
        await w.sim.clear_faults()
    assert progress[0] is False
    assert progress[2] is True
    exp = await w.exporter()
    await w.caught_up(exp)
    assert await w.assert_exact(exp) > 100
    assert "traffic_state_loaded" in exp.log()


async def _advanced(w: World, before: dict[str, int]) -> bool:
    return await _saved(w) and w.saved_cursors() != before


async def _more(w: World, seen: int) -> bool:
    return len(await w.sim.requests("traffic")) > seen


CORRUPTIONS = {
    "truncated": lambda b: b[: len(b) // 2],
    "garbage": lambda b: bytes(range(256)) * 4,
    "wrong shape": lambda b: b'{"version": 1, "count_keys": [], "accounts": []}',
    "empty": lambda b: b"",
}


async def test_corrupt_state_file_is_reported_and_read_on_from_where_it_says(w: World) -> None:
    """A file cut short still says each account's cursor, and the cursor file of its last
    save says it for a file that says nothing: the minutes after it are read into counters
    that start at 0 again; a file that says nothing without its cursor file is a fresh
    start."""
    exp = await start_fresh(w)
    await exp.stop()
    cursor_file = w.state.with_name(f"{w.state.name}.cursors.json")
    for name, corrupt in CORRUPTIONS.items():
        saved = w.saved_cursors()
        w.state.write_bytes(corrupt(w.state.read_bytes()))
        fresh = name == "empty"
        if fresh:
            cursor_file.unlink()
        await w.sim.advance(300)
        exp = await w.exporter()
        await exp.wait_for(lambda: _logged(exp, "traffic_state_ignored"), f"{name}")  # noqa: B023
        ends = await w.caught_up(exp)
        if fresh:
            w.first = {a: e - 60 for a, e in ends.items()}  # a fresh cursor
        else:
            w.first = {a: c + 60 for a, c in saved.items()}  # the cursors the text or file say
        await w.counted(exp)
        assert await w.assert_exact(exp) >= 1, name
        await exp.wait_for(lambda: _saved(w), f"{name}: replaced by a good state file")
        await exp.stop()
        assert exp.proc.returncode == 0
    lines = [json.loads(x) for x in exp.log().splitlines() if "traffic_state_ignored" in x]
    assert len(lines) == len(CORRUPTIONS)
    assert all(line["path"] == str(w.state) and line["problem"] for line in lines)


async def _logged(exp: ExporterProcess, event: str) -> bool:
    return event in exp.log()


async def _saved(w: World) -> bool:
    try:
        w.saved_cursors()
    except (ValueError, KeyError, TypeError):
        return False
    return True


async def test_unusable_state_path_stops_the_start_naming_it(w: World) -> None:
    """A state path that can never be written is refused before anything counts (a volume
    that fails later holds counters back instead: tests/lifecycle/test_readiness.py)."""
    w.state.mkdir()  # neither readable nor replaceable as a file
    done = await asyncio.to_thread(
        subprocess.run,
        [PYTHON, "-m", "exporter", "run", "--config.file", str(w.config())],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=SAFETY_SECONDS,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"config error: traffic.state_file: {w.state} cannot be written ({w.state} is a directory)"
    ]


async def test_sigterm_during_a_refresh_cuts_it_short_and_exits_0_with_state_saved(
    w: World,
) -> None:
    exp = await start_fresh(w)
    await exp.stop()
    before = w.saved_cursors()
    await w.sim.fault("traffic", "slow", delay=1.0)
    await w.sim.advance(25 * 60)
    seen = {a: await requests_for(w, a) for a in ACCOUNTS}
    exp = await w.exporter()

    async def second_window_asked() -> bool:  # the first 10 minutes are counted by then
        # after the 1-minute read whose Date readings check our clock (a new process), the
        # first 10-minute window (2 requests each) and one request of the second
        counts = [await requests_for(w, a) for a in ACCOUNTS]
        return all(n >= seen[a] + 5 for n, a in zip(counts, ACCOUNTS, strict=True))

    await exp.wait_for(second_window_asked, "the second window of the refresh")
    assert await exp.scrape()  # answered (200, samples) while the refresh goes on
    exp.proc.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(exp.proc.wait, SAFETY_SECONDS)
    assert code == 0
    output = exp.log()
    assert "exporter_stopped" in output
    # The refresh was still running at SIGTERM (so also during the scrape before it), and the
    # exit did not wait for its remaining windows: one info line, not an error.
    assert "poll_cancelled" in output
    assert ("Traceback" in output, '"level": "error"' in output) == (False, False), output
    after = w.saved_cursors()
    assert all(after[a] >= before[a] + 10 * 60 for a in ACCOUNTS), (before, after)

    await w.sim.clear_faults()
    exp = await w.exporter()
    await w.caught_up(exp)
    assert await w.assert_exact(exp) >= 26


async def test_listen_address_in_use_exits_1_with_a_message(w: World) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", w.port))
        taken.listen()
        config = w.config()
        done = await asyncio.to_thread(
            subprocess.run,
            [PYTHON, "-m", "exporter", "run", "--config", str(config)],
            capture_output=True,
            text=True,
            env=child_env(),
            cwd=ROOT,
            timeout=30,
        )
    w.guard.add("run output", done.stdout + done.stderr)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "error:" in done.stderr
