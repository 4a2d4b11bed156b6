"""Bad upstream replies, generated: a poll never raises, only the replying area/account goes down.

A proxy in front of the simulator answers one endpoint of account ``bad`` with a mutation of
the simulator's own reply (missing fields, wrong types, nulls, unknown fields, huge numbers,
NaN, empty lists, wrong nesting); everything else (account ``good``, the other areas) gets
the simulator's genuine answers. Each example runs on a freshly built daemon context.
"""

from __future__ import annotations

import asyncio
import copy
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.config import Settings
from exporter.exposition.lines import format_value
from exporter.runtime.scheduler import Scheduler
from exporter.runtime.service import Service, build_context
from exporter.simulator import Simulator, serve
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor, configure_logging
from exporter.traffic import state_read
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.upstream import UpstreamError

from .leaks import LeakGuard
from .rig import STATIC_TOKEN, T0, parse, parse_strict, sim_config
from .rig import settings as make_settings
from .tamper import Op, Tamper, apply, encode, extra_ops, ops

ACCOUNTS = ("bad", "good")
AREAS = ("traffic", "restream", "dvr", "talking_head")
DAY = 86400
MINUTE_TEXT = "2026-01-01T17:00:00"
# The endpoints of account "bad" each area polls: (path, account query parameter).
ENDPOINTS: dict[str, tuple[tuple[str, str], ...]] = {
    "traffic": (("/app/metrics/v1/", "bad"), ("/app/metrics/v1/resources", "bad")),
    "restream": (
        ("/app/restream/v2/bad/resources", ""),
        ("/app/restream/v2/bad/status", ""),
        ("/app/restream/v2/bad/history", ""),
    ),
    "dvr": (("/app/dvr-net/v1/bad/streams/live/main", ""),),
    "talking_head": (("/app/th-api/v1/accounts/bad/configurations", ""),),
}
TEMPLATE_QUERY: dict[str, dict[str, str]] = {
    "/app/metrics/v1/": {"account": "bad", "start": MINUTE_TEXT, "end": "2026-01-01T17:01:00"},
    "/app/restream/v2/bad/history": {
        "resource_id": "1001",
        "start": "2025-12-31T17:00:00Z",
        "end": "2026-01-01T17:00:00Z",
    },
}
TEMPLATE_QUERY["/app/metrics/v1/resources"] = TEMPLATE_QUERY["/app/metrics/v1/"]
_ODD = re.compile(r'[^\w.:/@+=",{} -]|\\')
FAST = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass
class Outcome:
    results: dict[tuple[str, str, str], bool]  # (area, account, job) -> PollRunner result
    raised: list[BaseException]  # what the polls of "bad" raised (inside the runner)
    exposition: str
    state: bytes | None


@dataclass(repr=False)
class Bed:
    sim: Simulator
    tamper: Tamper
    clock: FakeClock
    conf: Settings
    session: aiohttp.ClientSession
    redactor: Redactor
    templates: dict[tuple[str, str], Any]
    guard: LeakGuard

    def __repr__(self) -> str:  # hypothesis prints the fixture with a failing example
        return "Bed(simulator behind a tampering proxy)"

    async def round(self, area: str, doc: Any, endpoint: tuple[str, str]) -> Outcome:
        """A fresh daemon context; two polls of every job of ``area`` (bad reply in place),
        then one of every other area, with a minute between them."""
        path = Path(TRAFFIC_SECTION.of(self.conf).state_file)
        await asyncio.to_thread(path.unlink, missing_ok=True)
        self.tamper.overrides = {Tamper.key(*endpoint): encode(doc)}
        ctx = build_context(self.conf, self.session, self.clock, self.redactor)
        ctx.client.backoff_seconds = 0.001
        service = Service(ctx, Scheduler(ctx.runner, ctx.clock))
        results: dict[tuple[str, str, str], bool] = {}
        raised: list[BaseException] = []

        def watched(poll: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                try:
                    await poll()
                except Exception as exc:
                    raised.append(exc)
                    raise

            return run

        for areas in ((area,), (area,), tuple(a for a in AREAS if a != area)):
            self.clock.advance(60)
            for account in ACCOUNTS:
                for job in service.jobs(account):
                    if job.area in areas:
                        bad = account == "bad" and job.area == area
                        fn = watched(job.poll) if bad else job.poll
                        ok = await ctx.runner.run(job.area, account, fn, job.name)
                        results[(job.area, account, job.name)] = ok
        await service.areas.traffic.poller.publisher.save_state()
        text = ctx.store.render_sync().plain.decode()
        self.guard.add("/metrics (bad input)", text)
        saved = await asyncio.to_thread(_read, path)
        return Outcome(results, raised, text, saved)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@pytest.fixture
async def bed(leak_guard: LeakGuard, tmp_path: Path) -> AsyncIterator[Bed]:
    clock = FakeClock(T0)
    sim = Simulator(sim_config(accounts=ACCOUNTS, token=STATIC_TOKEN), clock)
    sim_runner = await serve(sim)
    async with aiohttp.ClientSession() as session:
        tamper = Tamper(sim_runner.base_url, session)
        tamper_runner = web.AppRunner(tamper.app(), access_log=None)
        await tamper_runner.setup()
        site = web.TCPSite(tamper_runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{tamper_runner.addresses[0][1]}"
        conf = make_settings(
            url, tmp_path / "state.json", login=False, upstream={"timeout_seconds": 5}
        )
        conf = _accounts(conf)
        redactor = configure_logging(
            "info", "json", Redactor(conf.secrets()), stream=leak_guard.log
        )
        templates = {}
        for endpoints in ENDPOINTS.values():
            for path, _ in endpoints:
                async with session.get(
                    sim_runner.base_url + path,
                    params=TEMPLATE_QUERY.get(path),
                    headers={"CDN-AUTH-TOKEN": STATIC_TOKEN},
                ) as resp:
                    assert resp.status == 200, (path, await resp.text())
                    templates[(path, "")] = await resp.json()
        yield Bed(sim, tamper, clock, conf, session, redactor, templates, leak_guard)
        await tamper_runner.cleanup()
    await sim_runner.cleanup()


def _accounts(conf: Settings) -> Settings:
    from dataclasses import replace

    from exporter.config import AccountSettings

    return replace(conf, accounts=tuple(AccountSettings(a, ("live/main",)) for a in ACCOUNTS))


def mutated(bed: Bed, endpoint: tuple[str, str], program: list[Op]) -> Any:
    doc = bed.templates[(endpoint[0], "")]
    for op in program:
        doc = apply(doc, op)
    return doc


def assert_contained(out: Outcome, area: str) -> None:
    """Only area/bad may fail; it fails with an UpstreamError naming the problem; what is
    exported stays readable by Prometheus, and the state file stays loadable."""
    for (job_area, account, _), ok in out.results.items():
        if (job_area, account) != (area, "bad"):
            assert ok, (job_area, account)
    for exc in out.raised:
        assert isinstance(exc, UpstreamError), repr(exc)
    fast = parse(out.exposition)
    # Lines whose label values need escaping (or are unusual) are read again by
    # prometheus_client's parser: both readers must see the same series and values.
    odd = [x for x in out.exposition.splitlines() if x and x[0] != "#" and _ODD.search(x)]
    strict = parse_strict("\n".join(odd) + "\n")
    for key, value in strict.items():
        assert key in fast, key
        assert value == fast[key] or (math.isnan(value) and math.isnan(fast[key])), key
    for key, value in fast.items():
        name = key[0]
        if name.endswith(("_total", "_count", "_bucket")):
            assert math.isfinite(value), (key, format_value(value))
            assert value >= 0, key
    if out.state is not None:
        state_read.parse(out.state)


@pytest.mark.parametrize("area", AREAS)
@FAST
@given(data=st.data())
async def test_a_bad_reply_never_crashes_a_poll_and_stays_in_its_area(
    bed: Bed, area: str, data: st.DataObject
) -> None:
    endpoint = data.draw(st.sampled_from(ENDPOINTS[area]), label="endpoint")
    program = data.draw(st.lists(ops, min_size=1, max_size=3), label="mutations")
    out = await bed.round(area, mutated(bed, endpoint, program), endpoint)
    assert_contained(out, area)
    bad = [ok for (a, account, _), ok in out.results.items() if (a, account) == (area, "bad")]
    if not all(bad):
        assert out.raised


@pytest.mark.parametrize("area", AREAS)
@settings(FAST, max_examples=10)
@given(data=st.data())
async def test_unknown_extra_fields_are_ignored(bed: Bed, area: str, data: st.DataObject) -> None:
    endpoints = [e for e in ENDPOINTS[area] if not e[0].endswith("/history")]
    endpoint = data.draw(st.sampled_from(endpoints), label="endpoint")
    program = data.draw(st.lists(extra_ops, min_size=1, max_size=3), label="extra fields")
    out = await bed.round(area, mutated(bed, endpoint, program), endpoint)
    assert_contained(out, area)
    assert all(out.results.values()), out.raised


ABSURD = (
    ("traffic", 0, ("data", 0, "edge_requests_total"), 1.7e308),  # twice: +Inf
    ("traffic", 1, ("data", 0, "edge_hit_bytes"), 10**400),  # a gauge would be dropped alone
    ("dvr", 0, ("data", 0, "dvr", "window"), 10**400),
    ("talking_head", 0, ("quota", "left"), -(10**400)),
)


@pytest.mark.parametrize(
    ("area", "endpoint", "where", "value"), ABSURD, ids=[f"{a[0]}-{a[2][-1]}" for a in ABSURD]
)
async def test_an_absurd_number_fails_that_poll_with_a_pointed_error(
    bed: Bed, area: str, endpoint: int, where: tuple[str | int, ...], value: float
) -> None:
    """Regression: 1.7e308 counted twice made +Inf counters, and the state file (all
    accounts in one JSON document) could no longer be written, so every account's traffic
    poll failed from then on; numbers beyond the float range raised OverflowError."""
    path = ENDPOINTS[area][endpoint]
    doc = copy.deepcopy(bed.templates[(path[0], "")])
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    out = await bed.round(area, doc, path)
    assert_contained(out, area)
    assert [ok for (a, acc, _), ok in out.results.items() if (a, acc) == (area, "bad")] == [False]
    assert len(out.raised) == 2  # both polls of the area failed, each with an UpstreamError
    assert all(str(where[-1]) in str(exc) for exc in out.raised), out.raised
    if area == "traffic":
        assert out.state is not None
        assert state_read.parse(out.state)["good"].cursor is not None
