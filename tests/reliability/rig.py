"""The whole daemon (tests/rig/daemon.py's ``running``) against the simulator, one FakeClock.

Both listen on real sockets; the test drives polls through ``Service.jobs`` and scrapes
``/metrics`` over HTTP, so what is asserted is what Prometheus would get.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import Settings, parse_config
from exporter.simulator import SimConfig, SimRunner, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor, configure_logging
from exporter.traffic.parse import COUNT_KEYS
from tests.rig.daemon import Daemon as RunningDaemon
from tests.rig.daemon import running
from tests.simulator.hold import Hold, serve_held

from .leaks import LeakGuard

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z, near the daily peak
ACCOUNTS = ("demo-media", "demo-shop")
STREAMS = ("live/main", "news")
LOGIN = "ops@example.com"
PASSWORD = "pw-SECRET-login-5c1d"
STATIC_TOKEN = "static-SECRET-token-93ab"
READ_TOKEN = "adm-read-SECRET-71f0"
WRITE_TOKEN = "adm-write-SECRET-2e9c"
TIMEOUT = 1.5  # upstream.timeout_seconds (room for a loaded machine): "slow" answers after SLOW
SLOW = 2.0
TOKEN_LIFETIME = 600.0
INTERVALS = {"restream": 30.0, "history": 60.0, "dvr": 30.0, "talking_head": 120.0}
TICK = 30.0  # fake seconds between two rounds of polls

Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]


def sim_config(**changes: Any) -> SimConfig:
    base: dict[str, Any] = {
        "accounts": ACCOUNTS,
        "token": STATIC_TOKEN,
        "username": LOGIN,
        "password": PASSWORD,
        "token_lifetime_seconds": TOKEN_LIFETIME,
        "late_seconds": 90.0,
        "slow_seconds": SLOW,
        "request_log_size": 200_000,
        "token_requests_per_minute": 1000,
    }
    return SimConfig(**{**base, **changes})


def settings(
    base_url: str, state_file: Path | str = "", login: bool = True, **over: Any
) -> Settings:
    """The daemon's config for these tests (``over``: section -> changed keys)."""
    auth = {"username": LOGIN, "password": PASSWORD} if login else {"token": STATIC_TOKEN}
    raw: dict[str, Any] = {
        "upstream": {"base_url": base_url, "timeout_seconds": TIMEOUT, **auth},
        "accounts": [{"name": a, "dvr_streams": list(STREAMS)} for a in ACCOUNTS],
        "traffic": {"delay_seconds": 120, "revisit_minutes": 5, "state_file": str(state_file)},
        "restream": {
            "interval_seconds": INTERVALS["restream"],
            "history_interval_seconds": INTERVALS["history"],
        },
        "dvr": {"interval_seconds": INTERVALS["dvr"]},
        "talking_head": {"interval_seconds": INTERVALS["talking_head"]},
        "listen": "127.0.0.1:9877",
        "admin": {"enabled": True, "read_token": READ_TOKEN, "write_token": WRITE_TOKEN},
        "log": {"level": "debug", "format": "json"},
    }
    for section, keys in over.items():
        raw[section] = {**raw.get(section, {}), **keys}
    return parse_config(raw, env={})


_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*(?:\\.[^"\\]*)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _unescape(value: str) -> str:
    return re.sub(r"\\.", lambda e: _UNESCAPE.get(e.group(0), e.group(0)), value)


def parse(text: str) -> Samples:
    """Every sample of a text exposition: a fast reader of what the exporter writes
    (prometheus_client's parser takes a second per scrape of this size; ``parse_strict`` is
    it, and the bad-input tests compare the two)."""
    out: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, brace, body = head.partition("{")
        assert _NAME.fullmatch(name), line
        assert body.endswith("}") == bool(brace), line
        body = body[:-1]
        labels: list[tuple[str, str]] = []
        if body:
            labels = _LABEL.findall(body)
            if "\\" in body:
                labels = [(k, _unescape(v)) for k, v in labels]
        key = (name, tuple(sorted(labels)))
        assert key not in out, f"duplicate series {key}"
        out[key] = float(value)
    return out


def parse_strict(text: str) -> Samples:
    """The same through prometheus_client's parser (slow; for the odd cross-check)."""
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def lab(**labels: str) -> Labels:
    return tuple(sorted(labels.items()))


def family(samples: Samples, name: str, **match: str) -> dict[Labels, float]:
    """Samples of one name whose labels include ``match``."""
    want = set(match.items())
    return {labels: v for (n, labels), v in samples.items() if n == name and want <= set(labels)}


@dataclass
class Scrape:
    status: int
    samples: Samples

    def up(self, area: str, account: str) -> float | None:
        return self.samples.get(("cdnvideo_up", lab(account=account, area=area)))

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples.get((name, lab(**labels)))


class Daemon(RunningDaemon):
    """One exporter, started by the rig (tests/rig/daemon.py), stopped by ``stop``."""

    def __init__(self, started: RunningDaemon, stack: AsyncExitStack, guard: LeakGuard):
        super().__init__(started.app, started.url, started.client, started.runner)
        self._stack = stack
        self.guard = guard
        self.http = aiohttp.ClientSession()
        self.keep_outputs = True  # False: scan each output at once and keep none (soak)

    def _seen(self, where: str, text: str) -> None:
        (self.guard.add if self.keep_outputs else self.guard.check)(where, text)

    async def poll(
        self, areas: Iterable[str] | None = None, accounts: Iterable[str] = ACCOUNTS
    ) -> dict[tuple[str, str, str], bool]:
        """Run every job of these areas and accounts at once, as the scheduler would when
        they fall due together; (area, account, job) -> success."""
        wanted = None if areas is None else set(areas)
        keys: list[tuple[str, str, str]] = []
        runs = []
        for account in accounts:
            for job in self.service.jobs(account):
                if wanted is None or job.area in wanted:
                    keys.append((job.area, account, job.name))
                    runs.append(self.ctx.runner.run(job.area, account, job.poll, job.name))
        if (wanted is None or "auth" in wanted) and self.ctx.settings.upstream.username:
            keys.append(("auth", "", ""))
            runs.append(self._auth_check())
        results = await asyncio.gather(*runs)
        return dict(zip(keys, results, strict=True))

    async def _auth_check(self) -> bool:
        await self.service.check_auth()
        return self.ctx.runner.healthy("auth", "") is True

    async def scrape(self, render: bool = True) -> Scrape:
        """GET /metrics (after a render, so fragments aged by the fake clock drop out)."""
        if render:
            await self.ctx.store.render()
        async with self.http.get(self.url + "/metrics") as resp:
            body = await resp.text()
            status = resp.status
        self._seen("/metrics", body)
        return Scrape(status, parse(body) if status == 200 else {})

    async def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.http.get(self.url + path, headers=headers) as resp:
            body = await resp.text()
            self._seen(f"GET {path}", body)
            return resp.status, body

    async def stop(self) -> None:
        await self.http.close()
        await self._stack.aclose()


async def start_daemon(conf: Settings, clock: FakeClock, guard: LeakGuard) -> Daemon:
    """Like ``cdnvideo-exporter run``: logging set up with the config's redactor, the app's
    cleanup context owns session, renderer and state; only the timers are left out."""
    redactor = configure_logging(
        conf.log.level, conf.log.format, Redactor(conf.secrets()), stream=guard.log
    )
    guard.secret(*conf.secrets())
    stack = AsyncExitStack()
    started = await stack.enter_async_context(
        running(conf, clock, redactor=redactor, shutdown_timeout=2.0)
    )
    started.ctx.client.backoff_seconds = 0.01
    return Daemon(started, stack, guard)


async def start_simulator(
    clock: FakeClock, guard: LeakGuard, hold: Hold | None = None, **changes: Any
) -> tuple[Simulator, SimRunner]:
    """The simulator on a free port; with ``hold``, that gate stands in front of it."""
    sim = Simulator(sim_config(**changes), clock)
    guard.secret(sim.token, sim.config.password)
    guard.sources.append(lambda: {r.token or "" for r in sim.requests.all()})
    return sim, await (serve(sim, "127.0.0.1", 0) if hold is None else serve_held(sim, hold))


# --- traffic truth ----------------------------------------------------------------------------
def counter_name(key: str, scope: str) -> tuple[str, dict[str, str]]:
    """COUNT_KEYS entry -> (sample name, extra labels) of its counter."""
    if key == "edge_hit_bytes":
        return f"cdnvideo_{scope}_edge_hit_bytes_total", {}
    side, _, rest = key.partition("_")
    if rest == "transferred_bytes":
        return f"cdnvideo_{scope}_transferred_bytes_total", {"side": side}
    if rest == "requests_total":
        return f"cdnvideo_{scope}_requests_total", {"side": side}
    code = rest.removeprefix("status_")
    if code.endswith("xx"):  # the platform's class keys have their own family
        return f"cdnvideo_{scope}_responses_by_class_total", {"side": side, "class": code}
    return f"cdnvideo_{scope}_responses_total", {"side": side, "code": code}


def exported_counters(
    samples: Samples, account: str, resource: Mapping[str, str] | None = None
) -> dict[str, float | None]:
    """Every counted key of one account (or one resource: its full label set) as exported."""
    scope = "resource" if resource else "account"
    base = {"account": account, **(resource or {})}
    out: dict[str, float | None] = {}
    for key in COUNT_KEYS:
        name, extra = counter_name(key, scope)
        out[key] = samples.get((name, lab(**base, **extra)))
    return out


def truth(
    sim: Simulator, account: str, minutes: Iterable[int], resource: str | None = None
) -> dict[str, float]:
    """The simulator's final figures summed over ``minutes``, for every counted key."""
    total = dict.fromkeys(COUNT_KEYS, 0.0)
    for m in minutes:
        final = sim.traffic_truth(account, m, resource)
        for key in COUNT_KEYS:
            total[key] += final[key]
    return total


def accounted_minutes(scrape: Scrape, account: str, first: int) -> range:
    """From ``first`` to the end of the latest window the account's gauges describe."""
    end = scrape.value("cdnvideo_account_window_end_timestamp_seconds", account=account)
    assert end is not None, f"no traffic window exported for {account}"
    return range(first, int(end), 60)


def assert_traffic_exact(sim: Simulator, scrape: Scrape, first: Mapping[str, int]) -> int:
    """Every account and resource counter equals the simulator's final truth over the minutes
    accounted since ``first`` (per account): nothing missing, nothing twice. Returns how many
    minutes were compared per account."""
    compared = 0
    for account in ACCOUNTS:
        minutes = accounted_minutes(scrape, account, first[account])
        want = truth(sim, account, minutes)
        assert exported_counters(scrape.samples, account) == want, account
        for res in sim.resources(account):
            labels = {"resource": res.id}  # counters carry no names (cdnvideo_resource_info)
            got = exported_counters(scrape.samples, account, labels)
            expected: dict[str, float | None] = {**truth(sim, account, minutes, res.id)}
            if sim.has_quirk("bad-values") and res == sim.resources(account)[-1]:
                expected["edge_transferred_bytes"] = None  # its edge bandwidth is never readable
            assert got == expected, (account, res.id)
        compared = len(minutes)
    return compared
