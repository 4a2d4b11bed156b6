"""What settle reads cost and whether counts stay exact, under request budgets and limits.

``python -m bench.settle [--hours 6] [--resources 3]``

The simulator serves one account on 127.0.0.1 with figures rising for 4 minutes after a
minute closes; the traffic poller reads it on an injected clock (a poll every 15 s, as the
scheduler runs traffic), for each case below: a request budget (``upstream.max_requests_per_
minute``) or the platform's own limit (``api_requests_per_minute``, answered 429), and a
settle schedule. Then a restart that reads no new minute settles what is still owed, and the
counters are compared with the simulator's final figures. Printed per case: requests and
settle requests per account per minute, polls cut short for want of budget, requests the
platform refused, minutes given up or missed, and the edge-request counter minus the truth.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import structlog

from exporter.config import UpstreamSettings
from exporter.exposition import Store, StoreKey
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator, serve
from exporter.simulator.requests_log import RecordedRequest
from exporter.simulator.routes_traffic import parse_minute
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.families import ACCOUNT
from exporter.traffic.reply import MetricsEndpoint
from exporter.traffic.settings import TrafficSettings
from exporter.upstream import UpstreamClient, UpstreamError

T0 = 1_767_225_600 + 5  # 2026-01-01T00:00:05Z
ACC = "demo-media"
TICK = 15.0


@dataclass(frozen=True)
class Case:
    name: str
    budget: int  # upstream.max_requests_per_minute (0 = none)
    platform: int  # the simulator's api_requests_per_minute (0 = none)
    schedule: tuple[int, ...]
    one_minute: bool = False  # the platform answers 1-minute windows only (quirk)


CASES = (
    Case("no limit, revisit 5", 0, 0, (5,)),
    Case("budget 3, revisit 5", 3, 3, (5,)),
    Case("budget 4, revisit 5", 4, 4, (5,)),
    Case("budget 3, [5, 15, 60]", 3, 3, (5, 15, 60)),
    Case("budget 4, [5, 15, 60]", 4, 4, (5, 15, 60)),
    Case("platform limit 6, [1, 4]", 0, 6, (1, 4)),
    Case("budget 6, [1, 4]", 6, 6, (1, 4)),
    # 1-minute replies: every settle read costs a pair per minute (4.00 a minute at revisit 5)
    Case("1-min, limit 6, revisit 5", 0, 6, (5,), one_minute=True),
    Case("1-min, budget 4, revisit 5", 4, 4, (5,), one_minute=True),
    Case("1-min, budget 3, revisit 5", 3, 3, (5,), one_minute=True),
)


@dataclass
class Result:
    requests: float
    settle: float
    postponed: float
    refused: int
    given_up: float
    missed: float
    error: float


def settle_requests(sent: list[RecordedRequest]) -> int:
    """Requests for a window whose first minute that endpoint was asked for before."""
    seen: set[tuple[str, int]] = set()
    count = 0
    for r in sent:
        q = dict(r.query)
        start, end = parse_minute("start", q["start"]), parse_minute("end", q["end"])
        if (r.path, start) in seen:
            count += 1
        seen.update((r.path, m) for m in range(start, end, 60))
    return count


async def run(case: Case, hours: float, resources: int, state_dir: Path) -> Result:
    clock = FakeClock(T0)
    sim = Simulator(
        SimConfig(
            late_seconds=240,
            resources_per_account=resources,
            api_requests_per_minute=case.platform,
            request_log_size=1_000_000,
            quirks=frozenset({"one-minute-window"} if case.one_minute else ()),
        ),
        clock,
    )
    runner = await serve(sim, "127.0.0.1", 0)
    metrics = SelfMetrics()
    store = Store(clock)
    state_file = str(state_dir / f"{abs(hash(case))}.json")
    try:
        async with aiohttp.ClientSession() as session:
            up = UpstreamSettings(
                base_url=runner.base_url, token=sim.token, max_requests_per_minute=case.budget
            )
            client = UpstreamClient(session, up, metrics, clock, retries=0)

            def poller(delay: int) -> TrafficPoller:
                settings = TrafficSettings(
                    delay_seconds=delay, revisit_minutes=case.schedule, state_file=state_file
                )
                source = MetricsEndpoint(client)
                return TrafficPoller(source, store, metrics, clock, settings, budget=client.budget)

            p = poller(120)
            await p.poll(ACC)
            first = p.accounts.ledger(ACC).cursor
            assert first is not None
            for _ in range(int(hours * 3600 / TICK)):
                clock.advance(TICK)
                with contextlib.suppress(UpstreamError):  # a poll the platform refused whole
                    await p.poll(ACC)
            minutes = hours * 60
            sent = [r for r in sim.requests if r.area == "traffic"]
            settle = settle_requests(sent)
            drain = poller(86_400)  # a restart that reads no new minute: settle what is owed
            for _ in range(2000):
                if not drain.accounts.ledger(ACC).pending:
                    break
                clock.advance(TICK)
                with contextlib.suppress(UpstreamError):
                    await drain.poll(ACC)
            cursor = drain.accounts.ledger(ACC).cursor
            assert cursor is not None
            truth = sum(
                sim.traffic_final(ACC, m)["edge_requests_total"]
                for m in range(first, cursor + 60, 60)
            )
            fragment = store.fragment(StoreKey("traffic", ACC), include_stale=True)
            assert fragment is not None
            counted = fragment.value(ACCOUNT.requests_total, account=ACC, side="edge") or 0.0

            def sample(name: str, **labels: str) -> float:
                return metrics.registry.get_sample_value(name, labels) or 0.0

            windows = "cdnvideo_traffic_windows_total"
            return Result(
                requests=len(sent) / minutes,
                settle=settle / minutes,
                postponed=sample("cdnvideo_upstream_polls_postponed_total", area="traffic"),
                refused=sim.rate.refused,
                given_up=sample(windows, account=ACC, outcome="given_up"),
                missed=sample(windows, account=ACC, outcome="missed"),
                error=counted - truth,
            )
    finally:
        await runner.cleanup()


async def main(hours: float, resources: int) -> None:
    print(
        f"{'case':28} {'req/min':>8} {'settle/min':>10} {'postponed':>9} {'refused':>7} "
        f"{'given up':>8} {'missed':>6} {'counted - truth':>15}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            r = await run(case, hours, resources, Path(tmp))
            print(
                f"{case.name:28} {r.requests:8.2f} {r.settle:10.2f} {r.postponed:9.0f} "
                f"{r.refused:7d} {r.given_up:8.0f} {r.missed:6.0f} {r.error:15.0f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--resources", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    asyncio.run(main(args.hours, args.resources))
