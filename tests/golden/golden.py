"""The golden exposition: what ``/metrics`` shows for a fixed simulator and an injected clock.

The whole daemon (``create_app`` without its timers, started by tests/rig/daemon.py) polls the
simulator (fixed seed, small data set, one account) over HTTP on 127.0.0.1 for ``MINUTES`` of
platform time: the real scheduler's jobs run when they fall due on a FakeClock (APScheduler's
own loop, through tests/rig/schedule.py's ``run_due``), with ``EXACT`` timing (no jitter, no
spread of first runs) so each run's instant is fixed. The rendered exposition is then made
independent of the machine:

- durations are real time (a poll takes what it takes on this machine), so the two duration
  histograms are written as if every observation took 0 s: each bucket holds the count, the
  sum is 0; the counts themselves are real;
- the values that depend on the machine and the checkout, the Python version, revision and
  branch in ``cdnvideo_exporter_build_info``, are replaced by ``X.Y.Z``, ``REVISION`` and
  ``BRANCH``; no port, path or host name of the machine appears in the exposition;
- prometheus-client's process and platform collectors (``process_*``, ``python_info``) describe
  the test process, not the exporter's output: their families are left out here, and
  tests/lifecycle/test_build_and_process_metrics.py proves ``/metrics`` carries them.

``python -m tests.golden --update`` (``make golden``) rewrites tests/golden/exposition.prom;
tests/golden/test_golden.py compares it byte for byte, so every change to a metric name,
label, value or HELP text shows as a diff in review.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
from collections.abc import AsyncIterator
from pathlib import Path

import structlog.testing
from aiohttp import web

from exporter.config import parse_config
from exporter.runtime.scheduler import EXACT
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.buildinfo import build_info
from exporter.support.clock import FakeClock
from exporter.web.app import CTX
from tests.rig.daemon import running
from tests.rig.schedule import run_due

GOLDEN = Path(__file__).with_name("exposition.prom")
T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z
ACCOUNT = "demo-media"
MINUTES = 12


async def exposition() -> str:
    """The exposition after ``MINUTES`` of polling (see the module docstring)."""
    with structlog.testing.capture_logs():  # the run's log lines are not the point here
        return normalise(await _run())


async def _run() -> str:
    async with polled() as (app, _url):
        return app[CTX].store.render_sync().plain.decode()


@contextlib.asynccontextmanager
async def polled() -> AsyncIterator[tuple[web.Application, str]]:
    """The daemon after ``MINUTES`` of polling, served on a free 127.0.0.1 port: (app, base URL).
    Stopped, with the simulator, on leaving."""
    clock = FakeClock(T0)
    sim = Simulator(
        SimConfig(
            accounts=(ACCOUNT,),
            resources_per_account=3,
            restreams_per_account=2,
            dvr_streams_per_account=2,
        ),
        clock,
    )
    sim_runner = await serve(sim)
    conf = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "accounts": [{"name": ACCOUNT, "dvr_streams": list(sim.dvr.streams[ACCOUNT])}],
            "log": {"level": "error", "format": "json"},
        },
        env={},
    )
    try:
        async with running(conf, clock, timing=EXACT) as daemon:
            ctx, service = daemon.ctx, daemon.service
            ctx.client.backoff_seconds = 0.0
            scheduler = service.scheduler  # its jobs are in: create_app served the account
            end = T0 + MINUTES * 60
            while (due := scheduler.next_due()) is not None and due < end:
                clock.set(due)
                await run_due(scheduler)
                # Prometheus reads /metrics between two polls (a new counter series is held
                # at 0 until a scrape was answered with it)
                ctx.store.mark_served(await ctx.store.render())
            clock.set(end)
            await ctx.store.render()  # /metrics serves what the last render swapped in
            yield daemon.app, daemon.url
    finally:
        await sim_runner.cleanup()


DURATIONS = ("cdnvideo_poll_duration_seconds", "cdnvideo_upstream_request_duration_seconds")


def normalise(text: str) -> str:
    """The exposition with machine-dependent values replaced (see the module docstring)."""
    counts: dict[str, str] = {}
    for line in text.splitlines():
        name, _, rest = line.partition("{")
        if name.removesuffix("_count") in DURATIONS and name.endswith("_count"):
            labels, _, value = rest.rpartition("} ")
            counts[f"{name.removesuffix('_count')}{{{labels}}}"] = value
    out = []
    for line in text.splitlines():
        if _from_process_collectors(line):
            continue
        name, _, rest = line.partition("{")
        family = name.removesuffix("_bucket").removesuffix("_sum")
        if family in DURATIONS and name != family + "_count" and not line.startswith("#"):
            labels, _, _value = rest.rpartition("} ")
            if name.endswith("_sum"):
                line = f"{name}{{{labels}}} 0.0"
            else:
                series = ",".join(p for p in labels.split(",") if not p.startswith("le="))
                line = f"{name}{{{labels}}} {counts[f'{family}{{{series}}}']}"
        out.append(line)
    result = "\n".join(out) + "\n"
    build = build_info()  # a checkout's git revision and branch change with every commit
    for label, value, shown in (
        ("pythonversion", platform.python_version(), "X.Y.Z"),
        ("revision", build.revision, "REVISION"),
        ("branch", build.branch, "BRANCH"),
    ):
        result = result.replace(f'{label}="{value}"', f'{label}="{shown}"')
    return result


# The exporter's own HTTP metrics count the scrapes that read them: a render between two
# scrapes (the renderer renders after every change, when it gets to it) shows one more.
SCRAPES_COUNTED = "cdnvideo_exporter_http_"


def steady(text: str) -> str:
    """The exposition without the lines of the process collectors and of the exporter's own
    HTTP metrics, whose values move between two scrapes of the same state."""
    return "".join(
        line
        for line in text.splitlines(True)
        if line == "# EOF\n"
        or not (_from_process_collectors(line) or _name(line).startswith(SCRAPES_COUNTED))
    )


def _name(line: str) -> str:
    return line.split(" ")[2] if line.startswith("# ") else line.partition("{")[0].split(" ")[0]


def _from_process_collectors(line: str) -> bool:
    name = _name(line)
    return name.startswith("process_") or name == "python_info"


def current() -> str:
    return asyncio.run(exposition())
