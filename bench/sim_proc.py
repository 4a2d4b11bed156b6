"""The platform simulator in a process of its own: prints its address as JSON, serves until
SIGTERM. ``python -m bench.sim_proc --resources 1000 --restreams 200 --dvr 100 [--accounts 5]``
(the figures are per account; the accounts are ``--account``, then ``<account>-2``, ...)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from bench.procs import announce_until_signal
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import SystemClock

ACCOUNT = "bench"


def account_names(first: str, count: int) -> tuple[str, ...]:
    """``first``, then ``<first>-2`` ... ``<first>-<count>``."""
    return (first, *(f"{first}-{i}" for i in range(2, count + 1)))


async def _run(args: argparse.Namespace) -> None:
    names = account_names(args.account, args.accounts)
    config = SimConfig(
        accounts=names,
        resources_per_account=args.resources,
        restreams_per_account=args.restreams,
        dvr_streams_per_account=args.dvr,
        request_log_size=args.request_log,
    )
    sim = Simulator(config, SystemClock())
    runner = await serve(sim, "127.0.0.1", 0)
    ready = {
        "base_url": runner.base_url,
        "token": sim.token,
        "account": args.account,
        "dvr_streams": sorted(sim.dvr.streams[args.account]),
        "accounts": [{"name": n, "dvr_streams": sorted(sim.dvr.streams[n])} for n in names],
    }
    await announce_until_signal(runner, ready)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.sim_proc", description=__doc__)
    p.add_argument("--account", default=ACCOUNT)
    p.add_argument("--accounts", type=int, default=1, help="accounts, each with the figures below")
    p.add_argument("--resources", type=int, default=1000, help="CDN resources")
    p.add_argument("--restreams", type=int, default=200, help="restream resources")
    p.add_argument("--dvr", type=int, default=100, help="DVR streams")
    p.add_argument("--request-log", type=int, default=1_000_000, help="requests kept in the log")
    asyncio.run(_run(p.parse_args(argv)))


if __name__ == "__main__":
    main()
