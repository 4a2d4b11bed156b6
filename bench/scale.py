"""One benchmark run at one scale: simulator, exporter and baseline processes, every figure;
with ``Plan.aged_hours``, a second exporter started on the files of a daemon that ran that
long (``bench.aged``), measured beside the fresh one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import socket
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench import aged, cost, procs, prom
from bench.measure import fetch, median, paired_ratio, percentile, sample_health, side_by_side
from exporter.simulator.dataset import cdn_resources

ACCOUNT = "bench"
SCRAPE_INTERVAL = 15.0  # one Prometheus scraping during the steady phase
HEALTH_EVERY = 0.05  # /healthz sampled this often over the steady phase (with aged_hours)
SLOW_MS = 50.0  # the loop-stall target


@dataclass(frozen=True)
class Plan:
    """How long and how often to measure at each scale."""

    steady_seconds: float = 60.0
    warmup_seconds: float = 0.0  # wait this long after readiness before the steady phase
    exporter_samples: int = 400
    baseline_samples: int = 40
    scrape_budget_seconds: float = 120.0  # fewer baseline samples when they are this slow
    refreshes: int = 5
    ready_timeout: float = 180.0
    cpu_bursts: int = 5  # bursts of back-to-back scrapes for the CPU per scrape (median)
    cpu_burst_scrapes: int = 300
    tuned: bool = True  # exporter.runtime.tuning.tune_for_serving (--untuned compares without it)
    # Above this many resources the prometheus-client baseline is not run (it parses the whole
    # exposition into objects: gigabytes at 25,000); the static-body floor still is.
    baseline_max_resources: int = 5000
    # > 0: after the fresh exporter, one started on the files of a daemon that ran this many
    # hours (``bench.aged``); both with remote write on, its receiver down
    aged_hours: float = 0.0
    # > 0: the scale's resources split over accounts of this many (0: one account)
    per_account: int = 0
    # the prometheus binary to run during the steady phase ("": none, for the reason below)
    prometheus: str = ""
    prometheus_interval: float = SCRAPE_INTERVAL  # its scrape and rule evaluation interval
    no_prometheus: str = "not run"  # why there is no Prometheus, when ``prometheus`` is ""
    # Above this many resources no Prometheus is run (its head holds every series: gigabytes
    # at 25,000; docs/performance.md, *What it costs the platform and the user's Prometheus*)
    prometheus_max_resources: int = 5000

    @classmethod
    def quick(cls, steady_seconds: float | None = None) -> Plan:
        return cls(
            steady_seconds=10.0 if steady_seconds is None else steady_seconds,
            exporter_samples=120,  # pairs with the floor: cheap, and the ratio needs them
            baseline_samples=4,
            cpu_bursts=3,
            cpu_burst_scrapes=100,
            scrape_budget_seconds=20.0,
            refreshes=2,
        )


def accounts_for(resources: int, per_account: int) -> int:
    """How many accounts hold ``resources`` at ``per_account`` each (0: one holds all)."""
    return max(1, math.ceil(resources / per_account)) if per_account > 0 else 1


def areas_for(resources: int, fixed: bool) -> tuple[int, int]:
    """Restream resources and DVR streams at a scale: 200 and 100 at 1000 CDN resources,
    proportional elsewhere (at least one each), or always 200 and 100 with ``fixed``."""
    if fixed:
        return 200, 100
    return max(1, resources // 5), max(1, resources // 10)


@dataclass
class Aged:
    """The aged start's figures (NaN when not measured)."""

    hours: float
    write_s: float = float("nan")  # writing the aged files (bench side, before the start)
    ready_s: float = float("nan")  # process start until /readyz answers 200
    traffic_ready_s: float = float("nan")  # ... until it shows traffic and state file ready
    stall_healthz_ms: float = float("nan")  # worst /healthz answer over the steady phase
    slow_healthz: int = 0  # of them, answers over SLOW_MS
    healthz: int = 0
    cpu_s_per_min: float = float("nan")
    rss_mb: float = float("nan")
    peak_rss_mb: float = float("nan")
    files_written: dict[str, int] = field(default_factory=dict)  # bench.aged.sizes at the start
    files: dict[str, int] = field(default_factory=dict)  # ... at the end of the steady phase


@dataclass
class Result:
    """The figures of one scale (times in ms or s as named; NaN when not measured)."""

    resources: int
    restreams: int
    dvr_streams: int
    accounts: int = 1
    series: int = 0
    bytes_plain: int = 0
    bytes_gzip: int = 0
    exporter_p50_ms: float = float("nan")
    exporter_p99_ms: float = float("nan")
    exporter_headers_p50_ms: float = float("nan")
    static_p50_ms: float = float("nan")  # the same gzip body served as fixed bytes (the floor)
    # The median of each exporter scrape over the floor scrape beside it (bench.measure)
    paired_floor_ratio: float = float("nan")
    # The bare handler's CPU per request of that body, as below for the exporter.
    static_user_cpu_per_scrape_ms: float = float("nan")
    static_sys_cpu_per_scrape_ms: float = float("nan")
    # The exporter's CPU per gzip scrape, background removed: in its own code (user) and in
    # the kernel (system: copying the body into the socket, loopback delivery included).
    exporter_user_cpu_per_scrape_ms: float = float("nan")
    exporter_sys_cpu_per_scrape_ms: float = float("nan")
    baseline_p50_ms: float = float("nan")
    baseline_p99_ms: float = float("nan")
    ratio: float = float("nan")
    healthz_idle_ms: float = float("nan")
    stall_healthz_ms: float = float("nan")
    stall_probe_ms: float = float("nan")
    refresh_s: float = float("nan")
    refresh_poll_s: float = float("nan")
    swap_s: float = float("nan")
    rerender_ms: float = float("nan")
    gc_pause_ms: float = float("nan")
    slice_ms: float = float("nan")  # the longest callback the loop ran during a refresh
    slice_where: str = ""  # ... and what it was (a coroutine's or a callback's name)
    cpu_s_per_min: float = float("nan")
    rss_mb: float = float("nan")
    peak_rss_mb: float = float("nan")  # VmHWM at the end of the steady phase
    peak_rss_after_refreshes_mb: float = float("nan")  # bench's own refresh pollers included
    upstream_per_min: float = float("nan")
    traffic_per_min_per_account: float = float("nan")
    steady_seconds: float = 0.0
    # Sample storage in the exporter (label tuples once, values 8 bytes) per series
    storage_bytes_per_series: float = float("nan")
    background_cpu: tuple[float, float] = (0.0, 0.0)  # user, system CPU s/s in the steady phase
    upstream_by_area: dict[str, int] = field(default_factory=dict)
    # the exporter's own estimate for the config (exporter.runtime.cost), by area, a minute
    upstream_estimate: dict[str, float] = field(default_factory=dict)
    openmetrics_samples: int = 0
    bytes_openmetrics_plain: int = 0
    bytes_openmetrics_gzip: int = 0
    prometheus: prom.Figures | None = None  # a real Prometheus over the steady phase
    prometheus_note: str = ""  # why ``prometheus`` is None
    samples: dict[str, int] = field(default_factory=dict)
    ready_s: float = float("nan")  # process start until /readyz answers 200
    traffic_ready_s: float = float("nan")  # ... until it shows traffic and state file ready
    # with aged_hours: the worst /healthz answer over the steady phase, answers over SLOW_MS
    steady_healthz_ms: float = float("nan")
    steady_slow_healthz: int = 0
    files: dict[str, int] = field(default_factory=dict)  # bench.aged.sizes, end of steady
    aged: Aged | None = None

    @property
    def cpu_percent(self) -> float:
        return self.cpu_s_per_min / 60 * 100

    @property
    def floor_ratio(self) -> float:
        """The exporter's scrape over the same bytes from a bare handler (the floor): the
        median of the pairs' ratios when measured, else the ratio of the two medians."""
        if self.paired_floor_ratio == self.paired_floor_ratio:
            return self.paired_floor_ratio
        return self.exporter_p50_ms / self.static_p50_ms

    @property
    def rss_bytes_per_series(self) -> float:
        return self.rss_mb * (1 << 20) / self.series if self.series else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "cpu_percent": self.cpu_percent,
            "floor_ratio": self.floor_ratio,
            "rss_bytes_per_series": self.rss_bytes_per_series,
        }


def exporter_config(
    sim: dict[str, Any], state_file: str = "", remote_write_url: str = ""
) -> dict[str, Any]:
    """The daemon's config against the simulator (every account it serves): every interval
    at its default, and a traffic state file as the shipped deployments have (written after
    every change); remote write on when ``remote_write_url`` is given."""
    accounts = sim.get("accounts") or [{"name": sim["account"], "dvr_streams": sim["dvr_streams"]}]
    config: dict[str, Any] = {
        "upstream": {"base_url": sim["base_url"], "token": sim["token"]},
        "accounts": accounts,
        "listen": "127.0.0.1:9877",  # not used: the runner binds a free port
        "log": {"level": "warning", "format": "json"},
        "traffic": {"state_file": state_file},
    }
    if remote_write_url:
        config["remote_write"] = {"url": remote_write_url}
    return config


def receiver_down() -> str:
    """A remote-write URL nothing listens on (a loopback port bound, then let go): every
    write is refused at once, the minutes stay pending."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/api/v1/write"


async def wait_ready(session: aiohttp.ClientSession, base: str, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            async with session.get(f"{base}/readyz") as reply:
                if reply.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the exporter was not ready within {within:.0f} s")


def _traffic_ready(doc: Any) -> bool:
    """Whether a /readyz answer has the traffic area of every account and the state file
    ready (the other areas' polls may end before or after it)."""
    try:
        areas = doc["areas"]
        return bool(doc["state_file"]["ready"]) and all(
            a["traffic"]["ready"] for a in areas.values()
        )
    except (KeyError, TypeError):
        return False


async def start_ready(
    session: aiohttp.ClientSession, config: Path, plan: Plan
) -> tuple[procs.Child, float, float]:
    """The exporter of ``config`` started; the seconds from its process start until /readyz
    answered 200, and until it showed the traffic area and the state file ready (polled
    every 50 ms)."""
    untuned = () if plan.tuned else ("--untuned",)
    started = time.monotonic()
    exporter = await procs.start("bench.exporter_proc", "--config", str(config), *untuned)
    url = f"{exporter.ready['base_url']}/readyz"
    traffic = float("nan")
    try:
        while time.monotonic() - started < plan.ready_timeout:
            with contextlib.suppress(aiohttp.ClientError, ValueError):
                async with session.get(url) as reply:
                    doc = json.loads(await reply.read())
                    if traffic != traffic and _traffic_ready(doc):
                        traffic = time.monotonic() - started
                    if reply.status == 200:
                        return exporter, time.monotonic() - started, traffic
            await asyncio.sleep(0.05)
        raise RuntimeError(f"the exporter was not ready within {plan.ready_timeout:.0f} s")
    except BaseException:
        await exporter.stop()
        raise


async def upstream_counts(
    session: aiohttp.ClientSession, sim_base: str, start: float, end: float
) -> Counter[str]:
    """Requests the simulator received in [start, end), by area (its request log)."""
    async with session.get(f"{sim_base}/_sim/requests") as reply:
        log = await reply.json()
    return Counter(r["area"] for r in log if start <= r["time"] < end)


async def _scraped(session: aiohttp.ClientSession, base: str, plan: Plan) -> tuple[float, int, int]:
    """Scrape every SCRAPE_INTERVAL for the steady phase; with ``plan.aged_hours``, sample
    /healthz every HEALTH_EVERY meanwhile (on a connection of its own): (the worst answer in
    ms, how many were over SLOW_MS, how many in all); (NaN, 0, 0) without."""
    stop = asyncio.Event()
    sampler = None
    async with aiohttp.ClientSession() as health:
        if plan.aged_hours > 0:
            sampler = asyncio.create_task(
                sample_health(health, f"{base}/healthz", stop, HEALTH_EVERY)
            )
        started = time.monotonic()
        while (left := plan.steady_seconds - (time.monotonic() - started)) > 0:
            await fetch(session, f"{base}/metrics")
            await asyncio.sleep(min(SCRAPE_INTERVAL, left))
        stop.set()
        answers = await sampler if sampler is not None else []
    if not answers:
        return float("nan"), 0, 0
    ms = [a * 1e3 for a in answers]
    return max(ms), sum(1 for m in ms if m > SLOW_MS), len(ms)


async def _steady(
    session: aiohttp.ClientSession,
    result: Result,
    exporter: procs.Child,
    sim: procs.Child,
    plan: Plan,
) -> None:
    base = exporter.ready["base_url"]
    cpu0, t0 = procs.cpu_times(exporter.pid), time.time()
    worst, slow, _ = await _scraped(session, base, plan)
    result.steady_healthz_ms, result.steady_slow_healthz = worst, slow
    cpu1, t1 = procs.cpu_times(exporter.pid), time.time()
    minutes = (t1 - t0) / 60
    result.steady_seconds = t1 - t0
    result.cpu_s_per_min = (sum(cpu1) - sum(cpu0)) / minutes
    result.background_cpu = ((cpu1[0] - cpu0[0]) / (t1 - t0), (cpu1[1] - cpu0[1]) / (t1 - t0))
    result.rss_mb, result.peak_rss_mb = procs.memory_mb(exporter.pid)
    counts = await upstream_counts(session, sim.ready["base_url"], t0, t1)
    result.upstream_by_area = dict(sorted(counts.items()))
    result.upstream_per_min = sum(counts.values()) / minutes
    result.traffic_per_min_per_account = counts["traffic"] / minutes


async def _exposition(session: aiohttp.ClientSession, result: Result, base: str) -> None:
    _, plain, _ = await fetch(session, f"{base}/metrics", gzip=False)
    _, gz, encoding = await fetch(session, f"{base}/metrics")
    if encoding != "gzip":
        raise RuntimeError("/metrics did not answer gzip to Accept-Encoding: gzip")
    result.bytes_plain, result.bytes_gzip = len(plain), len(gz)
    result.series = cost.samples(plain)
    om_plain, om_gz = await cost.openmetrics(session, f"{base}/metrics")
    result.bytes_openmetrics_plain, result.bytes_openmetrics_gzip = len(om_plain), len(om_gz)
    result.openmetrics_samples = cost.samples(om_plain)


async def _storage(session: aiohttp.ClientSession, result: Result, base: str) -> None:
    async with session.get(f"{base}/_bench/storage") as reply:
        reply.raise_for_status()
        result.storage_bytes_per_series = (await reply.json())["bytes_per_series"]


async def _scrapes(
    session: aiohttp.ClientSession, result: Result, exporter: procs.Child, plan: Plan
) -> None:
    base = exporter.ready["base_url"]
    with_baseline = result.resources <= plan.baseline_max_resources
    # The floor serves from a process of its own: in the baseline's process it would answer
    # right after the baseline's scrape, hot, while the exporter had been idle for seconds.
    source = ("--source", f"{base}/metrics")
    floor = await procs.start("bench.baseline_proc", *source, "--static-only")
    baseline = await procs.start("bench.baseline_proc", *source) if with_baseline else floor
    try:
        burl = baseline.ready["base_url"]
        furl = floor.ready["base_url"]
        headers: list[float] = []
        static: list[float] = []
        beside: list[float] = []
        await fetch(session, f"{base}/metrics")  # connections open, caches warm
        if with_baseline:
            await fetch(session, f"{burl}/metrics")
        await fetch(session, f"{furl}/static")
        exp, ref = await side_by_side(
            session,
            f"{base}/metrics",
            f"{burl}/metrics" if with_baseline else None,
            plan.exporter_samples,
            plan.baseline_samples,
            plan.scrape_budget_seconds,
            exporter_headers=headers,
            static_url=f"{furl}/static",
            static=static,
            beside=beside,
        )
        await _scrape_cpu(session, result, exporter, floor, plan)
    finally:
        if baseline is not floor:
            await baseline.stop()
        await floor.stop()
    result.exporter_p50_ms, result.exporter_p99_ms = median(exp) * 1e3, percentile(exp, 99) * 1e3
    result.baseline_p50_ms, result.baseline_p99_ms = median(ref) * 1e3, percentile(ref, 99) * 1e3
    result.exporter_headers_p50_ms = median(headers) * 1e3
    result.static_p50_ms = median(static) * 1e3
    result.paired_floor_ratio = paired_ratio(exp, beside)
    result.ratio = result.baseline_p50_ms / result.exporter_p50_ms
    result.samples.update(exporter_scrapes=len(exp), baseline_scrapes=len(ref))


async def _burst_cpu(
    session: aiohttp.ClientSession,
    url: str,
    pid: int,
    requests: int,
    background: tuple[float, float],
) -> tuple[float, float]:
    """(user, system) CPU seconds that process ``pid`` spent per gzip GET of ``url`` in one
    burst of ``requests`` back-to-back requests, less its ``background`` rate (CPU s/s)."""
    cpu0, t0 = procs.cpu_times(pid), time.perf_counter()
    for _ in range(requests):
        await fetch(session, url)
    cpu1, t1 = procs.cpu_times(pid), time.perf_counter()
    user = max(0.0, cpu1[0] - cpu0[0] - background[0] * (t1 - t0)) / requests
    system = max(0.0, cpu1[1] - cpu0[1] - background[1] * (t1 - t0)) / requests
    return user, system


async def _scrape_cpu(
    session: aiohttp.ClientSession,
    result: Result,
    exporter: procs.Child,
    floor: procs.Child,
    plan: Plan,
) -> None:
    """CPU per gzip scrape, user and system apart, of the exporter and of the bare handler
    serving the same bytes (``/static`` of the floor's process, idle otherwise), in
    alternating bursts: CPU from /proc (10 ms ticks, hence hundreds of requests a burst), the
    exporter's less the steady phase's background rate; the median burst of each (one that
    met a traffic poll is an outlier)."""
    n = plan.cpu_burst_scrapes
    exporter_url = f"{exporter.ready['base_url']}/metrics"
    static_url = f"{floor.ready['base_url']}/static"
    exp: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    for _ in range(plan.cpu_bursts):
        exp.append(await _burst_cpu(session, exporter_url, exporter.pid, n, result.background_cpu))
        bare.append(await _burst_cpu(session, static_url, floor.pid, n, (0.0, 0.0)))
    result.exporter_user_cpu_per_scrape_ms = median([u for u, _ in exp]) * 1e3
    result.exporter_sys_cpu_per_scrape_ms = median([s for _, s in exp]) * 1e3
    result.static_user_cpu_per_scrape_ms = median([u for u, _ in bare]) * 1e3
    result.static_sys_cpu_per_scrape_ms = median([s for _, s in bare]) * 1e3


async def _refreshes(session: aiohttp.ClientSession, result: Result, base: str, plan: Plan) -> None:
    async with aiohttp.ClientSession() as health:
        idle_stop = asyncio.Event()
        idle_task = asyncio.create_task(sample_health(health, f"{base}/healthz", idle_stop))
        await asyncio.sleep(1.0)
        idle_stop.set()
        result.healthz_idle_ms = median(await idle_task) * 1e3
        url = f"{base}/_bench/refresh?account={ACCOUNT}"
        async with session.post(url) as reply:  # warm-up: first history read looks back 24 h
            reply.raise_for_status()
        walls, polls, swaps, rerenders, probes, gcs, stalls = [], [], [], [], [], [], []
        slices: list[tuple[float, str]] = []
        for _ in range(plan.refreshes):
            await asyncio.sleep(1.0)
            stop = asyncio.Event()
            sampler = asyncio.create_task(sample_health(health, f"{base}/healthz", stop))
            async with session.post(url) as reply:
                reply.raise_for_status()
                timing = await reply.json()
            stop.set()
            stalls.append(max(await sampler))
            walls.append(timing["wall_seconds"])
            polls.append(timing["poll_seconds"])
            swaps.append(timing["swap_seconds"])
            rerenders.append(timing["rerender_seconds"])
            probes.append(timing["loop_lag_seconds"])
            gcs.append(timing["gc_pause_seconds"])
            slices.append((timing["slice_seconds"], timing["slice_where"]))
    result.refresh_s, result.refresh_poll_s = median(walls), median(polls)
    result.swap_s, result.rerender_ms = median(swaps), median(rerenders) * 1e3
    result.stall_healthz_ms, result.stall_probe_ms = max(stalls) * 1e3, max(probes) * 1e3
    result.gc_pause_ms = max(gcs) * 1e3
    worst_slice = max(slices)
    result.slice_ms, result.slice_where = worst_slice[0] * 1e3, worst_slice[1]
    result.samples.update(refreshes=len(walls))


def write_config(sim: procs.Child, tmp: Path, remote_write_url: str) -> tuple[Path, Path]:
    """The exporter's config file in ``tmp`` and the state file it names there."""
    config = tmp / "config.json"
    state = tmp / "traffic-state.json"
    raw = exporter_config(sim.ready, str(state), remote_write_url)
    config.write_text(json.dumps(raw), encoding="utf-8")
    return config, state


def restream_resources(result: Result) -> int:
    """The restream resources the simulator serves at this scale, every account's."""
    return max(1, result.restreams // result.accounts) * result.accounts


def why_no_prometheus(plan: Plan, resources: int) -> str:
    """Why no Prometheus runs at ``resources`` ("" when one does)."""
    if not plan.prometheus:
        return plan.no_prometheus
    if resources > plan.prometheus_max_resources:
        limit = plan.prometheus_max_resources
        return f"not run above {limit} resources (--prometheus-max-resources)"
    return ""


async def watched_steady(
    session: aiohttp.ClientSession,
    result: Result,
    exporter: procs.Child,
    sim: procs.Child,
    plan: Plan,
    tmp: Path,
) -> None:
    """The steady phase, with a real Prometheus scraping the exporter (``bench.prom``) when
    the plan names one: started before the warm-up, read and stopped after the phase."""
    watch = None
    result.prometheus_note = why_no_prometheus(plan, result.resources)
    if not result.prometheus_note:
        watch = prom.Watch(plan.prometheus, tmp, exporter.ready["base_url"],
                           plan.prometheus_interval)  # fmt: skip
        try:
            await watch.start()
        except (RuntimeError, OSError, aiohttp.ClientError) as exc:
            await watch.stop()
            result.prometheus_note = f"failed to start: {exc}"
            print(f"# prometheus {result.prometheus_note}", flush=True)
            watch = None
    try:
        await asyncio.sleep(2.0 + plan.warmup_seconds)  # renderer's turn, then warm-up
        await _steady(session, result, exporter, sim, plan)
        if watch is not None:
            result.prometheus = await watch.finish()
    finally:
        if watch is not None:
            await watch.stop()


async def _measure(
    result: Result, sim: procs.Child, tmp: Path, plan: Plan, remote_write_url: str
) -> None:
    config, state = write_config(sim, tmp, remote_write_url)
    raw = json.loads(config.read_text(encoding="utf-8"))
    result.upstream_estimate = cost.estimate(raw, restream_resources(result))
    connector = aiohttp.TCPConnector(limit_per_host=1)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as s:
        exporter, result.ready_s, result.traffic_ready_s = await start_ready(s, config, plan)
        try:
            base = exporter.ready["base_url"]
            await watched_steady(s, result, exporter, sim, plan, tmp)
            if not state.is_file():
                raise RuntimeError(f"the exporter wrote no state file at {state}")
            result.samples["state_file_bytes"] = state.stat().st_size
            result.files = aged.sizes(str(state))
            await _exposition(s, result, base)
            await _storage(s, result, base)
            await _scrapes(s, result, exporter, plan)
            await _refreshes(s, result, base, plan)
            result.peak_rss_after_refreshes_mb = procs.memory_mb(exporter.pid)[1]
        finally:
            await exporter.stop()


def aged_accounts(sim: dict[str, Any], per_account: int) -> list[aged.Account]:
    """The simulator's accounts and their CDN resources (as ``exporter.simulator`` names
    them: the n-th account's ids are ``<n>00001`` ...)."""
    return [
        aged.Account(a["name"], cdn_resources(i + 1, a["name"], per_account))
        for i, a in enumerate(sim["accounts"])
    ]


async def _measure_aged(
    result: Result, sim: procs.Child, tmp: Path, plan: Plan, remote_write_url: str
) -> Aged:
    """The aged start: the files written, the exporter started on them, the steady phase."""
    out = Aged(plan.aged_hours)
    config, state = write_config(sim, tmp, remote_write_url)
    accounts = aged_accounts(sim.ready, result.resources // result.accounts)
    started = time.monotonic()
    await asyncio.to_thread(aged.write, str(state), accounts, plan.aged_hours, time.time())
    out.write_s = time.monotonic() - started
    out.files_written = aged.sizes(str(state))
    connector = aiohttp.TCPConnector(limit_per_host=1)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as s:
        exporter, out.ready_s, out.traffic_ready_s = await start_ready(s, config, plan)
        try:
            await asyncio.sleep(2.0 + plan.warmup_seconds)
            cpu0, t0 = procs.cpu_seconds(exporter.pid), time.time()
            worst, slow, answers = await _scraped(s, exporter.ready["base_url"], plan)
            out.stall_healthz_ms, out.slow_healthz, out.healthz = worst, slow, answers
            cpu1, t1 = procs.cpu_seconds(exporter.pid), time.time()
            out.cpu_s_per_min = (cpu1 - cpu0) / ((t1 - t0) / 60)
            out.rss_mb, out.peak_rss_mb = procs.memory_mb(exporter.pid)
            out.files = aged.sizes(str(state))
        finally:
            await exporter.stop()
    return out


async def run_scale(resources: int, plan: Plan, fixed_areas: bool = False) -> Result:
    """Start the simulator and the exporter at ``resources``, measure, stop both; with
    ``plan.aged_hours``, then an exporter on aged files against the same simulator."""
    restreams, dvr = areas_for(resources, fixed_areas)
    accounts = accounts_for(resources, plan.per_account)
    result = Result(resources, restreams, dvr, accounts)
    per = resources // accounts
    sim = await procs.start(
        "bench.sim_proc",
        *("--account", ACCOUNT, "--accounts", str(accounts), "--resources", str(per)),
        *("--restreams", str(restream_resources(result) // accounts)),
        *("--dvr", str(max(1, dvr // accounts))),
    )
    url = receiver_down() if plan.aged_hours > 0 else ""
    try:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:  # lives as long as the exporter
            await _measure(result, sim, Path(tmp), plan, url)
        if plan.aged_hours > 0:
            with tempfile.TemporaryDirectory(prefix="bench-aged-") as tmp:
                result.aged = await _measure_aged(result, sim, Path(tmp), plan, url)
    finally:
        await sim.stop()
    return result
