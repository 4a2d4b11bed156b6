"""Upstream requests per minute by area, counted in the simulator's request log.

``python -m bench.requests [--scales 10,100,1000] [--minutes 30] [--budget 0,60]
[--dvr-poll-slices 1,5]``

The daemon (``create_app`` without its timers) and the simulator share one FakeClock; the
daemon's own scheduler starts every job when it falls due on that clock (``EXACT`` timing: no
jitter, no spread of first runs), so half an hour of polling takes seconds. One account per
scale: N CDN resources, N/5 restream resources, N/10 DVR streams (the mix of
docs/performance.md). ``--history-every-resource`` reads the restream history of every resource
on every history poll, as the exporter did before it read only changed resources plus a
round-robin share. ``--dvr-poll-slices`` sets ``dvr.poll_slices`` (each DVR stream read once in
that many polls).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections import Counter
from dataclasses import dataclass

import structlog
from aiohttp import web

from exporter.config import parse_config
from exporter.restream.area import RestreamArea
from exporter.restream.poller import AccountState
from exporter.runtime.scheduler import EXACT
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.app import CTX
from exporter.web.daemon import SERVICE, create_app

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z
ACCOUNT = "demo-media"
AREAS = ("traffic", "restream", "dvr", "talking_head", "auth")
WARMUP_MINUTES = 10  # the first history read of every resource, then steady state


@dataclass(frozen=True)
class Measurement:
    """Requests per minute by area in the steady phase, and what the budget did."""

    resources: int
    budget: int
    every_resource: bool
    dvr_slices: int
    per_minute: dict[str, float]
    busiest_minute: int  # most requests in any 60 s of the steady phase
    postponed: dict[str, float]
    up: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.per_minute.values())


async def measure(
    resources: int,
    minutes: int = 30,
    budget: int = 0,
    every_resource: bool = False,
    warmup_minutes: int = WARMUP_MINUTES,
    dvr_slices: int = 1,
) -> Measurement:
    """One run at ``resources`` CDN resources; see the module docstring."""
    from tests.rig.schedule import start_due  # APScheduler's look on the FakeClock (tests/rig)

    clock = FakeClock(T0)
    sim = Simulator(
        SimConfig(
            accounts=(ACCOUNT,),
            resources_per_account=resources,
            restreams_per_account=max(1, resources // 5),
            dvr_streams_per_account=max(1, resources // 10),
            request_log_size=1_000_000,
        ),
        clock,
    )
    sim_runner = await serve(sim)
    conf = parse_config(
        {
            "upstream": {
                "base_url": sim_runner.base_url,
                "token": sim.token,
                "max_requests_per_minute": budget,
            },
            "accounts": [{"name": ACCOUNT, "dvr_streams": list(sim.dvr.streams[ACCOUNT])}],
            "log": {"level": "warning", "format": "json"},
            "dvr": {"poll_slices": dvr_slices},
        },
        env={},
    )
    app = await create_app(conf, clock=clock, schedule=False, timing=EXACT)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        ctx, service = app[CTX], app[SERVICE]
        ctx.client.backoff_seconds = 0.0
        if every_resource:
            # the plan of every history poll: every resource
            restream = service.areas.get(RestreamArea).poller

            def read_all(_st: AccountState, ids: tuple[str, ...]) -> tuple[list[str], float]:
                return list(ids), 0.0

            restream._plan = read_all  # type: ignore[method-assign,assignment]
        scheduler = service.scheduler  # its jobs are in: create_app served the account
        end = T0 + (warmup_minutes + minutes) * 60
        while (due := scheduler.next_due()) is not None and due < end:
            clock.set(due)
            await asyncio.gather(*await start_due(scheduler))  # the jobs due run side by side
        start = T0 + warmup_minutes * 60
        steady = [r for r in sim.requests.all() if r.time >= start]
        counts = Counter(r.area for r in steady)
        times = sorted(r.time for r in steady)
        busiest, j = 0, 0
        for i, t in enumerate(times):
            while times[j] <= t - 60:
                j += 1
            busiest = max(busiest, i - j + 1)
        registry = ctx.metrics.registry
        postponed = {
            a: registry.get_sample_value("cdnvideo_upstream_polls_postponed_total", {"area": a})
            or 0.0
            for a in AREAS
        }
        up = {
            a: registry.get_sample_value("cdnvideo_up", {"account": ACCOUNT, "area": a}) or 0.0
            for a in AREAS[:4]
        }
        return Measurement(
            resources,
            budget,
            every_resource,
            dvr_slices,
            {a: counts.get(a, 0) / minutes for a in AREAS},
            busiest,
            postponed,
            up,
        )
    finally:
        await runner.cleanup()
        await sim_runner.cleanup()


def table(rows: list[Measurement]) -> str:
    head = "| resources (restream/DVR) | budget/min | history reads | DVR slices | "
    head += " | ".join(AREAS[:4]) + " | total/min | busiest 60 s | polls postponed |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for m in rows:
        scale = f"{m.resources} ({max(1, m.resources // 5)}/{max(1, m.resources // 10)})"
        mode = "every resource" if m.every_resource else "changed + round-robin"
        cells = " | ".join(f"{m.per_minute[a]:.1f}" for a in AREAS[:4])
        postponed = ", ".join(f"{a} {int(v)}" for a, v in m.postponed.items() if v) or "0"
        lines.append(
            f"| {scale} | {m.budget or 'none'} | {mode} | {m.dvr_slices} | {cells} | "
            f"{m.total:.1f} | {m.busiest_minute} | {postponed} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.requests", description=__doc__)
    parser.add_argument("--scales", default="10,100,1000")
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--budget", default="0", help="comma-separated budgets (0 = none)")
    parser.add_argument("--history-every-resource", action="store_true")
    parser.add_argument("--dvr-poll-slices", default="1", help="comma-separated dvr.poll_slices")
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    rows: list[Measurement] = []
    for scale in (int(s) for s in args.scales.split(",")):
        for b in (int(x) for x in args.budget.split(",")):
            for k in (int(x) for x in args.dvr_poll_slices.split(",")):
                one = measure(scale, args.minutes, b, args.history_every_resource, dvr_slices=k)
                rows.append(asyncio.run(one))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
