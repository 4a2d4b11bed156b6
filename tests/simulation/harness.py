"""One seed's run: the platform and the daemon on one simulated clock, events applied, scraped.

The platform's clock is a ``FakeClock`` (the truth); the daemon reads a ``HostClock`` that
follows it with the offset and drift the scenario draws (a host whose clock is stepped or
drifts). The daemon is built as ``exporter.web.daemon.create_app`` builds it (context,
Service, the real ``Scheduler`` with a seeded ``Timing``), without the web server: its jobs
run when they fall due on the host clock (APScheduler's own loop, through
tests/rig/schedule.py's ``run_due``), and ``/metrics`` is rendered through the real ``Store``
at every scrape. A restart stops one such daemon and builds the next one over the same state
file; a kill skips the final save and leaves a half-written temporary file behind; an
unwritable volume makes the state file's temporary path a directory, so every save fails as it
would on a read-only mount while the last good file stays readable.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast
from unittest import mock

import aiohttp
import structlog.testing

import exporter.runtime.registry  # noqa: F401  (declares the areas' config sections)
from exporter.config import ConfigError, Settings, parse_config
from exporter.exposition import pack
from exporter.exposition.deflate import deflate
from exporter.remotewrite.build import attach_writer
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION
from exporter.remotewrite.writer import RemoteWriter
from exporter.runtime.reload import Reloader
from exporter.runtime.scheduler import Scheduler, Timing
from exporter.runtime.service import Service, build_context
from exporter.simulator import SimConfig, Simulator
from exporter.support import offloop
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.traffic.settings import requests_per_minute
from tests.rig import schedule
from tests.simulation.invariant import COUNTERS, LATENESS, Checker, Violation, hhmm
from tests.simulation.scenario import T0, Daemon, Event, Scenario, draw
from tests.simulation.transport import RECEIVER_HOST, AuditSource, Transport

FAMILIES = {
    "account_requests": "cdnvideo_account_requests_total",
    "resource_requests": "cdnvideo_resource_requests_total",
    "resource_responses": "cdnvideo_resource_responses_total",
}
_SAMPLE = re.compile(r"^([a-z_]+)\{([^}]*)\} (\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
KEPT = (
    *COUNTERS,  # every counter family at account and resource scope
    "cdnvideo_traffic_windows_total",
    "cdnvideo_traffic_lag_seconds",
    "cdnvideo_up",
    "cdnvideo_upstream_polls_postponed_total",
    "cdnvideo_upstream_rate_limited_total",
    "cdnvideo_upstream_clock_readings_rejected_total",
    "cdnvideo_traffic_windows_owed",
    "cdnvideo_resource_info",
    "cdnvideo_traffic_audit_seconds_total",
    *(family for family, _ in LATENESS.values()),  # the lateness counters
)

Key = tuple[str, tuple[tuple[str, str], ...]]


class HostClock:
    """The host's clock: the platform's, stepped by ``offset`` and drifting by ``ppm``."""

    def __init__(self, platform: FakeClock) -> None:
        self.platform = platform
        self.offset = 0.0
        self.ppm = 0.0
        self._drift_from = 0.0

    def time(self) -> float:
        p = self.platform.time()
        return p + self.offset + (p - self._drift_from) * self.ppm * 1e-6

    def monotonic(self) -> float:
        """Never stepped (drift aside, which moves less than a step between two polls)."""
        return self.platform.time()

    def drift(self, ppm: float) -> None:
        now = self.platform.time()
        self.offset += (now - self._drift_from) * self.ppm * 1e-6
        self._drift_from, self.ppm = now, ppm


Families = dict[str, dict[Key, float]]


class Parser:
    """The samples of the families the invariant reads (``KEPT``), by family, from the plain
    exposition. The text is cut at its ``# HELP`` lines (one per family); only the kept
    families' blocks are parsed, and a block equal to the one the scrape before showed is not
    parsed again: its values are the same object, which tells the checker nothing changed.
    In a block that changed, a line equal to one the scrape before showed is not parsed again
    either (most of a family's series keep their value from one scrape to the next)."""

    def __init__(self) -> None:
        self._last: dict[str, dict[Key, float]] = {}
        # per family, the samples of each line of its block when last parsed
        self._lines: dict[str, dict[str, tuple[Key, float] | None]] = {}

    def parse(self, text: str) -> tuple[Families, list[str]]:
        """The kept families' values and their blocks of text, in exposition order."""
        seen: dict[str, dict[Key, float]] = {}
        out: Families = {}
        blocks: list[str] = []
        for block in text.split("# HELP ")[1:]:
            name = block[: block.find(" ")]
            if name not in KEPT:
                continue
            values = self._last.get(block)
            if values is None:
                values = self._samples(name, block)
            seen[block] = values
            out[name] = values
            blocks.append(block)
        self._last = seen
        return out, blocks

    def _samples(self, name: str, block: str) -> dict[Key, float]:
        out: dict[Key, float] = {}
        last = self._lines.get(name, {})
        seen: dict[str, tuple[Key, float] | None] = {}
        self._lines[name] = seen
        for line in block.splitlines():
            sample = seen[line] = last[line] if line in last else _sample(line)
            if sample is not None:
                out[sample[0]] = sample[1]
        return out


def _sample(line: str) -> tuple[Key, float] | None:
    m = _SAMPLE.match(line)
    if m is None or m.group(1) not in KEPT:  # exact names (durations are machine time)
        return None
    return (m.group(1), tuple(sorted(_LABEL.findall(m.group(2))))), float(m.group(3))


@dataclass
class Process:
    """One daemon between a start and a stop."""

    index: int
    daemon: Daemon
    settings: Settings
    service: Service
    reloader: Reloader
    started_at: float  # platform clock
    writer: RemoteWriter | None = None  # remote write, when the scenario draws it


@dataclass
class Outcome:
    """What a seed's run found; ``line()`` is what ``make sim`` prints for it."""

    seed: int
    violations: list[Violation]
    digest: str
    minutes: int
    requests: int
    scrapes: int
    notes: list[str] = field(default_factory=list)
    twin_requests: int = 0  # what the second replica of a pair sent
    refused: int = 0  # requests the platform's rate limit refused (both replicas')

    @property
    def ok(self) -> bool:
        return not self.violations

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in self.violations:
            out[v.kind] = out.get(v.kind, 0) + 1
        return out

    def line(self) -> str:
        if self.ok:
            return f"seed {self.seed}: ok"
        firsts: dict[str, Violation] = {}
        for v in self.violations:
            firsts.setdefault(v.kind, v)
        parts = [f"{k} x{n} ({firsts[k].detail})" for k, n in sorted(self.kinds().items())]
        return f"seed {self.seed}: FAIL " + "; ".join(parts)


class World:
    """The platform, the daemon's current process, the clocks and the checker of one seed."""

    def __init__(self, scenario: Scenario, directory: Path, beside: World | None = None) -> None:
        """``beside``: this is the second replica of a pair, on that world's platform, host
        and clocks, with its own network log, volume and checker."""
        self.s = scenario
        self.twin: World | None = None
        self._beside = beside is not None
        if beside is not None:
            self.platform, self.host, self.sim = beside.platform, beside.host, beside.sim
        else:
            self.platform = FakeClock(T0)
            self.host = HostClock(self.platform)
            self.sim = self._platform(scenario, self.platform)
        self.transport = Transport(self.sim)
        self.volume = directory / ("volume" if beside is None else "twin-volume")
        self.volume.mkdir()
        self.state_file = self.volume / "traffic-state.json"
        self.listed = list(scenario.accounts)
        self.exclude: list[str] = []
        self.daemon = scenario.daemon
        self.proc: Process | None = None
        self.checker = Checker(scenario, self.sim, self.transport)
        self.notes: list[str] = []
        self.scrapes = 0
        self._procs = 0
        self._outage = -1
        self._digest = hashlib.sha256()
        self._parser = Parser()
        if scenario.pair:
            self.twin = World(scenario.twin(), directory, beside=self)

    @staticmethod
    def _platform(scenario: Scenario, clock: FakeClock) -> Simulator:
        return Simulator(
            SimConfig(
                seed=scenario.seed,
                accounts=scenario.accounts,
                resources_per_account=scenario.resources,
                restreams_per_account=0,
                dvr_streams_per_account=0,
                late_seconds=scenario.late_seconds,
                late_half_seconds=scenario.late_half_seconds,
                api_requests_per_minute=scenario.platform_limit,
                quirks=frozenset(scenario.quirks),
            ),
            clock,
        )

    # -- the daemon's lifetime ----------------------------------------------------------------
    def _raw(self, daemon: Daemon) -> dict[str, Any]:
        s = self.s
        revisit = daemon.revisit if isinstance(daemon.revisit, int) else list(daemon.revisit)
        raw: dict[str, Any] = {
            "upstream": {
                "base_url": "http://platform.invalid",
                "token": self.sim.token,
                "max_requests_per_minute": daemon.budget,
            },
            "traffic": {
                "revisit_minutes": revisit,
                "delay_seconds": s.delay_seconds,
                "catch_up_minutes": s.catch_up_minutes,
                "state_file": str(self.state_file),
                "resource_status_codes": daemon.resource_status_codes,
                "per_resource": daemon.per_resource,
                "max_resources": daemon.max_resources,
                "resources_include": daemon.resources_include,
                "resources_exclude": daemon.resources_exclude,
                "series_retention_hours": daemon.retention_hours,
            },
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
            "metrics": {"exclude": list(self.exclude)},
            "log": {"level": "error", "format": "json"},
        }
        if not s.discovery:
            raw["accounts"] = [{"name": a} for a in self.listed]
        if s.remote_write:
            raw["remote_write"] = {"url": f"http://{RECEIVER_HOST}/api/v1/write"}
        return raw

    def _settings(self, daemon: Daemon) -> tuple[Daemon, Settings]:
        try:
            return daemon, parse_config(self._raw(daemon), env={})
        except ConfigError as exc:  # check-config refuses it: the operator gives the minimum
            unlimited = parse_config(self._raw(replace(daemon, budget=0)), env={})
            fixed = replace(daemon, budget=math.ceil(requests_per_minute(unlimited)))
            self.notes.append(f"budget {daemon.budget} refused ({exc}); {fixed.budget} instead")
            return fixed, parse_config(self._raw(fixed), env={})

    async def start(self) -> None:
        self.daemon, settings = self._settings(self.daemon)
        session = cast(aiohttp.ClientSession, self.transport.session())
        # without process_* and python_info: the machine's figures, read from /proc at each
        # render, which no invariant reads
        ctx = build_context(
            settings, session, self.host, Redactor(settings.secrets()), process=False
        )
        ctx.client.backoff_seconds = 0.0
        # No scrape here asks for OpenMetrics: its body is not rendered (a third of a render).
        ctx.store._extra_openmetrics = None
        # the second replica's jitter a draw of its own: the two poll at instants of their own
        draw = (
            f"twin {self.s.seed} {self._procs}"
            if self._beside
            else self.s.seed * 1000 + self._procs
        )
        timing = Timing(random=random.Random(draw).random)
        service = Service(ctx, Scheduler(ctx.runner, self.host, timing))
        auditor = service.areas.traffic.auditor  # its reads are marked: they count nothing
        auditor._source = AuditSource(auditor._source, self.transport)
        # the windows an audit samples, drawn from the seed: its reads spend the platform's
        # limit, so an unseeded draw would change what the daemon reads next
        auditor.book._rng = random.Random(f"audit {self.s.seed} {self._procs}")
        reloader = Reloader(
            lambda: parse_config(self._raw(self.daemon), env={}),
            lambda: ctx.settings,
            service.reconfigure,
            ctx.metrics.reload_done(self.host),
            ctx.store.render,
        )
        writer = None
        if REMOTE_WRITE_SECTION.of(settings).enabled:  # as the daemon attaches it
            writer = attach_writer(
                settings,
                session,
                self.host,
                ctx.metrics,
                lambda name: ctx.store.selection.wants(name),
                service.areas.traffic.poller.reader,
            )
        await ctx.store.render()
        service.start(timers=False)
        self.proc = Process(
            self._procs, self.daemon, settings, service, reloader, self.platform.time(), writer
        )
        self.checker.started(self.platform.time(), self.daemon)
        self._procs += 1

    async def stop(self, mode: str) -> None:
        proc = self.proc
        if proc is None:
            return
        await self.scrape()  # what Prometheus saw last
        if mode == "killed_in_save":  # dies inside a save: the new file written, not renamed
            with (
                mock.patch.object(os, "replace", side_effect=_Killed),
                contextlib.suppress(_Killed),
            ):
                await proc.service.areas.traffic.poller.publisher.save_state()
            proc.service.scheduler.shutdown()
        elif mode == "killed":
            proc.service.scheduler.shutdown()
            tmp = self.state_file.with_name(f".{self.state_file.name}.tmp")
            if not tmp.is_dir():
                tmp.write_bytes(b'{"version": 1, "accounts": {"acc')  # cut mid-write
        else:
            await proc.service.stop()
        await proc.service.ctx.client._session.close()
        self.checker.stopped(self.platform.time(), killed=mode.startswith("killed"))
        self.proc = None

    # -- the day ------------------------------------------------------------------------------
    def timeline(self) -> list[Event]:
        """The scenario's events with their ends made events of their own."""
        out: list[Event] = []
        for e in self.s.events:
            out.append(e)
            if e.kind == "outage":
                ends = (*e.args, ("of", e.at))
                out.append(Event(e.at + 60 * int(e.arg("minutes")), "outage_end", ends))
            if e.kind == "restart":
                out.append(Event(e.at + 60 * int(e.arg("down")), "start", e.args))
        return sorted(out, key=lambda e: e.at)  # stable: a restart before its own start

    async def apply(self, e: Event) -> None:
        sim, now = self.sim, self.platform.time()
        self.checker.event(now, e)
        if e.kind == "outage":
            self._outage = e.at  # a later outage replaces an earlier one
            kind = str(e.arg("kind"))
            if kind in ("timeout", "refused"):
                self.transport.down = kind
            else:
                sim.faults.set("*", kind)
        elif e.kind == "outage_end" and e.arg("of") == self._outage:
            self.transport.down = ""
            sim.faults.clear()
        elif e.kind == "restart":
            await self.stop(str(e.arg("mode")))
            if e.arg("state") is not None:
                self.damage(str(e.arg("state")))
            changes: dict[str, Any] = {}
            if e.arg("revisit") is not None:
                changes["revisit"] = e.arg("revisit")
            if e.arg("budget") is not None:
                changes["budget"] = e.arg("budget")
            if e.arg("codes") is not None:
                changes["resource_status_codes"] = e.arg("codes")
            for name in ("per_resource", "max_resources"):
                if e.arg(name) is not None:
                    changes[name] = e.arg(name)
            self.daemon = replace(self.daemon, **changes)
        elif e.kind == "start":
            if self.proc is None:
                await self.start()
        elif e.kind == "exclude":
            family = str(e.arg("family"))
            self.exclude = [FAMILIES[family]] if family else []
            await self.reload()
        elif e.kind == "clock":
            self.host.offset = float(e.arg("offset"))
        elif e.kind == "drift":
            self.host.drift(float(e.arg("ppm")))
        elif e.kind in ("unlist", "relist"):
            account = str(e.arg("account"))
            if self.s.discovery:
                (sim.unlisted.add if e.kind == "unlist" else sim.unlisted.discard)(account)
            else:
                self.listed = [a for a in self.s.accounts if a != account or e.kind == "relist"]
                if e.kind == "relist":
                    self.listed = [a for a in self.s.accounts if a in self.listed or a == account]
                await self.reload()
        elif e.kind == "unwritable":
            tmp = self.state_file.with_name(f".{self.state_file.name}.tmp")
            tmp.unlink(missing_ok=True)
            tmp.mkdir()
        elif e.kind == "writable":
            shutil.rmtree(self.state_file.with_name(f".{self.state_file.name}.tmp"))
        elif e.kind == "receiver":
            self.transport.receiver = str(e.arg("answer"))
        elif e.kind == "error_bodies":
            body = {"status": "error", "message": "Internal error", "description": "resource"}
            sim.faults.set("traffic", "error_200", count=int(e.arg("count")), match="resources",
                           body=body)  # fmt: skip

    def damage(self, how: str) -> None:
        """The state file as a restart may find it (``scenario.STATE_DAMAGE``)."""
        if not self.state_file.exists():
            return
        data = self.state_file.read_bytes()
        if how == "corrupt":
            self.state_file.write_bytes(b"\x00\x13not json" + data[:40])
        elif how == "truncated":
            self.state_file.write_bytes(data[: len(data) // 2])
        elif how == "previous":  # a settle read done is `stage` (how many), not `settled` (age)
            try:
                doc = json.loads(data)
            except ValueError:
                return  # left damaged by a restart before, while the daemon was down
            if not isinstance(doc, dict):
                return
            stages = self.daemon.stages()
            for account in doc.get("accounts", {}).values():
                for run in account.get("pending", []):
                    settled = run.pop("settled", 0)
                    run["stage"] = stages.index(settled) + 1 if settled in stages else 0
            self.state_file.write_text(json.dumps(doc))
        self.notes.append(f"state file left {how}")

    async def reload(self) -> None:
        if self.proc is not None:
            outcome = await self.proc.reloader.reload()
            if not outcome.ok:
                self.notes.append(f"reload refused: {outcome.message}")

    async def scrape(self) -> None:
        if self.proc is None:
            return
        store = self.proc.service.ctx.store
        exposition = await store.render()  # on the inline worker
        store.mark_served(exposition)  # what /metrics does with the body it answers with
        families, blocks = self._parser.parse(exposition.plain.decode())
        now = self.platform.time()
        self.scrapes += 1
        self._digest.update(f"{now:.3f}\n".encode())
        for block in blocks:
            self._digest.update(block.encode())
        self.checker.scrape(now, families)

    def _next(self, now: float, nxt: float) -> float:
        """``nxt`` (platform clock), or earlier when this daemon's scheduler has a job due."""
        if self.proc is None:
            return nxt
        due = self.proc.service.scheduler.next_due()
        if due is not None:
            nxt = min(nxt, max(now, now + (due - self.host.time())))
        if nxt <= now and (due or 0) > self.host.time():
            nxt = now + 0.001  # drift rounding: the job is a hair ahead
        return nxt

    async def run_due(self) -> None:
        if self.proc is not None:
            await schedule.run_due(self.proc.service.scheduler)
            if self.proc.writer is not None:
                await self.proc.writer.flush()  # its loop's round (offered minutes)

    def lives_through(self, e: Event) -> bool:
        """Whether this replica meets ``e`` (its day's events, and an outage's end)."""
        if e.kind == "outage_end":
            return True
        return e in self.s.events

    async def run(self) -> Outcome:
        end = T0 + self.s.minutes * 60
        events = self.timeline()
        worlds = [self] if self.twin is None else [self, self.twin]
        for w in worlds:
            await w.start()
        every = self.s.scrape_seconds
        next_scrape = T0 + every / 2
        while True:
            now = self.platform.time()
            nxt = min(end, next_scrape, T0 + events[0].at if events else end)
            for w in worlds:
                nxt = w._next(now, nxt)
            self.platform.set(max(now, nxt))
            now = self.platform.time()
            if now >= end:
                break
            while events and T0 + events[0].at <= now:
                e = events.pop(0)
                await self.apply(e)
                if self.twin is not None and self.twin.lives_through(e):
                    await self.twin.apply(e)
            for w in worlds:
                await w.run_due()
            if now >= next_scrape:
                for w in worlds:
                    await w.scrape()
                next_scrape += every
        violations: list[Violation] = []
        for w in worlds:
            await w.scrape()
            await w.stop("clean")
            found = w.checker.finish(end)
            violations += found if w is self else [v.of_twin() for v in found]
        for c in self.sim.churn_log:  # quirk resource-churn: what changed, for --verbose
            self.notes.append(f"{hhmm(c.at)} {c.account} resource {c.resource} {c.kind}")
        for w in worlds:
            for r in w.transport.reads:
                self._digest.update(f"{r}\n".encode())
            if w is not self:
                self._digest.update(w._digest.digest())
        return Outcome(
            seed=self.s.seed,
            violations=violations,
            digest=self._digest.hexdigest(),
            minutes=self.s.minutes,
            requests=self.transport.sent,
            scrapes=self.scrapes,
            notes=self.notes,
            twin_requests=self.twin.transport.sent if self.twin is not None else 0,
            refused=self.sim.rate.refused,
        )


class _Killed(BaseException):
    """The process dying between a save's write and its rename (mode ``killed_in_save``)."""


class Inline(concurrent.futures.Executor):
    """The refresh thread (``exporter.support.offloop.WORKER``) and the compression thread
    (``exporter.exposition.pack``) run inline: each step runs when submitted, in submission
    order as on the one real thread, without a thread switch whose timing the machine
    decides."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting side, as the thread would
            future.set_exception(exc)
        return future


class InlineOnLoop(Inline):
    """``Inline`` for the refresh thread: a step submitted on the event loop returns an
    asyncio future already done, which ``run_in_executor`` hands back as it is, so the
    awaiting poll goes on at once. A ``concurrent.futures.Future`` would hand its result over
    with ``call_soon_threadsafe``: a write to the loop's self-pipe and one more turn of the
    loop (a ``select``) for every step (docs/performance.md, *The deterministic simulation*)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the loop (a shutdown's last save): as ``Inline``
            return super().submit(fn, *args, **kwargs)
        future = loop.create_future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # raised where the poll awaits it, as from the thread
            future.set_exception(exc)
        return cast(concurrent.futures.Future[Any], future)


class Stored(Inline):
    """``Inline`` for the compression thread, which stores the pieces (deflate level 0)
    instead of compressing them: a scrape reads the same text, without zlib's work at level
    6 at every fragment built and a larger part to inflate at every scrape."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if fn is deflate:
            kwargs = {**kwargs, "level": 0}
        return super().submit(fn, *args, **kwargs)


@contextlib.contextmanager
def inline_worker() -> Iterator[None]:
    saved, compressor = offloop.WORKER, pack._compressor
    offloop.WORKER = cast(concurrent.futures.ThreadPoolExecutor, InlineOnLoop())
    pack._compressor = cast(concurrent.futures.ThreadPoolExecutor, Stored())
    try:
        yield
    finally:
        offloop.WORKER, pack._compressor = saved, compressor


@dataclass
class Timed:
    outcome: Outcome
    seconds: float


def _scratch() -> Iterator[str]:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="cdnvideo-sim-", dir=base) as d:
        yield d


async def run_scenario(scenario: Scenario) -> Outcome:
    """Run one scenario from start to end (the daemon's log lines are captured, not printed)."""
    for directory in _scratch():
        with structlog.testing.capture_logs(), inline_worker():
            return await World(scenario, Path(directory)).run()
    raise AssertionError("unreachable")


async def run_seed(seed: int, minutes: int = 1440) -> Timed:
    started = time.process_time()
    outcome = await run_scenario(draw(seed, minutes))
    return Timed(outcome, time.process_time() - started)


def run_seed_sync(args: tuple[int, int]) -> Timed:
    """``run_seed`` in a fresh event loop (a worker process of ``--jobs``)."""
    return asyncio.run(run_seed(*args))


def run_seeds(seeds: Sequence[int], minutes: int, jobs: int) -> Iterator[Timed]:
    """Each seed's run, in the order of ``seeds``: here one after the other, or on ``jobs``
    processes of their own (each a fresh interpreter, so no state leaks between seeds)."""
    if jobs <= 1:
        for seed in seeds:
            yield asyncio.run(run_seed(seed, minutes))
        return
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        yield from pool.imap(run_seed_sync, [(s, minutes) for s in seeds])
