"""``python -m bench [--scales 10,100,1000,5000,25000] [--quick] [--steady-seconds S]
[--per-account N] [--aged-hours H] [--no-prometheus] [--prometheus-interval S]``.

For each scale: the simulator and the exporter in processes of their own, the naive
prometheus-client baseline beside it (up to 5,000 resources), every figure of
docs/performance.md; then the table and the targets (met or missed, at every scale) on stdout
and, in ``--out`` (bench/out/), results.md, results.json, cost.png and growth.png (memory and
refresh time against series); then the simulation's rate (``bench.simulation``: a fixed
batch of seeds, simulated days per CPU minute).

With ``--aged-hours H`` each scale also starts an exporter on the files a daemon keeps after
H hours (``bench.aged``), after the fresh one and against the same simulator, both with remote
write on and its receiver down; a table of its own sets the two side by side (restart to
ready, worst /healthz over the steady phase, RSS, the size of every file kept) and the targets
gain the aged start's. ``--per-account N`` splits each scale's resources over accounts of N.

What it costs the platform and the user's Prometheus (``bench.cost``), a table of its own:
upstream requests a minute by area from the simulator's request log over the steady phase
beside the exporter's estimate, the scrape's samples and bytes (text and OpenMetrics), and,
with ``prometheus`` on PATH (Debian's package), a real Prometheus scraping the exporter over
the steady phase with deploy/prometheus/rules.yml loaded: each rule group's evaluation time
(``bench.prom``). Without it (or with ``--no-prometheus``) that column says why it is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from bench import procs, prom, simulation, targets
from bench.report import (
    aged_text_table,
    cost_text_tables,
    median_result,
    text_table,
    write_outputs,
)
from bench.scale import SCRAPE_INTERVAL, Plan, Result, run_scale

OUT = Path(__file__).resolve().parent / "out"


def _scales(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 10,100,1000: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("scales must be positive")
    return values


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--scales", type=_scales, default=[10, 100, 1000, 5000, 25000], metavar="N,N,..."
    )
    p.add_argument("--quick", action="store_true", help="fewer samples, 10 s steady phase")
    p.add_argument(
        "--steady-seconds",
        type=float,
        default=None,
        help="length of the steady phase (CPU, upstream requests); 300 for the 5-minute figure",
    )
    p.add_argument(
        "--warmup-seconds",
        type=float,
        default=0.0,
        help="wait after readiness before the steady phase (settle reads start after "
        "2 x revisit_minutes: 600 to see them at their steady rate)",
    )
    p.add_argument("--repeat", type=int, default=1, help="whole runs per scale; figures = medians")
    p.add_argument(
        "--fixed-areas",
        action="store_true",
        help="200 restream resources and 100 DVR streams at every scale (default: scaled)",
    )
    p.add_argument(
        "--untuned",
        action="store_true",
        help="run the exporter without exporter.runtime.tuning.tune_for_serving (to compare)",
    )
    p.add_argument(
        "--simulation-seeds",
        type=simulation.seeds,
        default=simulation.seeds(simulation.SEEDS),
        metavar="FIRST:END",
        help=f"the simulation batch whose rate is measured (default {simulation.SEEDS})",
    )
    p.add_argument(
        "--simulation-minutes",
        type=int,
        default=simulation.MINUTES,
        help=f"simulated minutes a seed of that batch (default {simulation.MINUTES}; 0: none)",
    )
    p.add_argument(
        "--aged-hours",
        type=float,
        default=0.0,
        help="also start an exporter on the files of a daemon that ran this long (0: off)",
    )
    p.add_argument(
        "--per-account",
        type=int,
        default=0,
        help="split each scale's resources over accounts of this many (0: one account)",
    )
    p.add_argument(
        "--no-prometheus",
        action="store_true",
        help="no real Prometheus over the steady phase (no rule evaluation figures)",
    )
    p.add_argument(
        "--prometheus-interval",
        type=float,
        default=SCRAPE_INTERVAL,
        help="its scrape and rule evaluation interval, seconds",
    )
    p.add_argument(
        "--prometheus-max-resources",
        type=int,
        default=Plan.prometheus_max_resources,
        help="no Prometheus above this many resources (its head holds every series)",
    )
    p.add_argument("--out", type=Path, default=OUT, help="where to write the result files")
    return p


def with_prometheus(plan: Plan, refused: bool, binary: str | None) -> Plan:
    """The plan with the ``prometheus`` binary to run, or the reason there is none."""
    if refused:
        return dataclasses.replace(plan, no_prometheus="not run: --no-prometheus")
    if binary is None:
        missing = "not run: prometheus not found on PATH (Debian package prometheus)"
        return dataclasses.replace(plan, no_prometheus=missing)
    return dataclasses.replace(plan, prometheus=binary)


async def _run(args: argparse.Namespace) -> list[Result]:
    plan = Plan.quick(args.steady_seconds) if args.quick else Plan()
    if args.steady_seconds is not None and not args.quick:
        plan = dataclasses.replace(plan, steady_seconds=args.steady_seconds)
    plan = dataclasses.replace(
        plan,
        warmup_seconds=args.warmup_seconds,
        tuned=not args.untuned,
        aged_hours=args.aged_hours,
        per_account=args.per_account,
        prometheus_interval=args.prometheus_interval,
        prometheus_max_resources=args.prometheus_max_resources,
    )
    plan = with_prometheus(plan, args.no_prometheus, prom.find())
    if not plan.prometheus:
        print(f"# recording rules not measured: {plan.no_prometheus}", flush=True)
    results = []
    for scale in args.scales:
        runs = []
        for i in range(args.repeat):
            started = time.monotonic()
            runs.append(await run_scale(scale, plan, args.fixed_areas))
            print(
                f"# scale {scale} run {i + 1}/{args.repeat}: {time.monotonic() - started:.0f} s",
                flush=True,
            )
        results.append(median_result(runs))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.aged_hours < 0 or args.per_account < 0:
        p.error("--aged-hours and --per-account must be 0 or more")
    if args.prometheus_interval < 0.1:
        p.error("--prometheus-interval must be at least 0.1 s")
    before = procs.machine()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = asyncio.run(_run(args))
    sim = None
    if args.simulation_minutes > 0:
        sim = simulation.measure(*args.simulation_seeds, args.simulation_minutes)
    after = procs.machine()
    print(text_table(results))
    print()
    if any(r.aged is not None for r in results):
        print(aged_text_table(results))
        print()
    print(cost_text_tables(results))
    print()
    print(targets.text_table(results))
    for r in results:
        where = f"{r.slice_ms:.1f} ms in {r.slice_where}"
        print(f"# longest slice on the loop at {r.resources} resources: {where}")
    if sim is not None:
        print()
        print(simulation.text_table(sim))
    conditions = {
        "date": started,
        "machine": f"{before['cpus']} CPUs, {before['cpu_model'] or 'unknown model'}",
        "python": before["python"],
        "load average (1/5/15 min) before": "/".join(f"{v:.2f}" for v in before["load_avg"]),
        "load average after": "/".join(f"{v:.2f}" for v in after["load_avg"]),
        "options": f"scales={args.scales} quick={args.quick} "
        f"steady_seconds={results[0].steady_seconds:.0f} warmup_seconds={args.warmup_seconds:.0f} "
        f"repeat={args.repeat} untuned={args.untuned} "
        f"fixed_areas={args.fixed_areas} simulation_minutes={args.simulation_minutes} "
        f"aged_hours={args.aged_hours:g} per_account={args.per_account}",
    }
    notes = [
        "exporter, simulator and baseline each run in a process of their own; "
        "the client (this process) scrapes them in turn over HTTP",
    ]
    notes += [f"Prometheus at {r.resources} resources: {r.prometheus_note}"
              for r in results if r.prometheus is None]  # fmt: skip
    if args.aged_hours > 0:
        notes.append(
            f"aged start: the files of a daemon that ran {args.aged_hours:g} h (bench.aged), "
            "written before its process starts; fresh and aged with remote write on, "
            "its receiver down (nothing listens on its port)"
        )
    written = write_outputs(args.out, results, conditions, notes, sim)
    if len(results) > 1 and not any(p.suffix == ".png" for p in written):
        print("# no plot: matplotlib is not installed (pip install matplotlib)")
    print("# wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
