"""``python -m tests.simulation``: run seeds, print each failing seed with its replay command.

python -m tests.simulation --seed 1234 --verbose   # one seed, its scenario and findings
python -m tests.simulation --seeds 0:1000          # seeds 0..999 (``make sim``)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from tests.simulation.harness import run_seeds
from tests.simulation.scenario import draw


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.simulation", description=__doc__)
    p.add_argument("--seed", type=int, help="run this one seed")
    p.add_argument("--seeds", default="0:200", help="FIRST:END, END excluded (default 0:200)")
    p.add_argument("--minutes", type=int, default=1440, help="simulated minutes a seed")
    p.add_argument("--jobs", "-j", type=int, default=1, help="seeds run at once (processes)")
    p.add_argument("--all", action="store_true", help="print a line for passing seeds too")
    p.add_argument("--verbose", "-v", action="store_true", help="print scenario and findings")
    args = p.parse_args(argv)
    if args.seed is not None:
        seeds = [args.seed]
    else:
        first, _, end = args.seeds.partition(":")
        seeds = list(range(int(first), int(end)))
    kinds: Counter[str] = Counter()
    examples: dict[str, int] = {}
    failed = 0
    started = time.perf_counter()
    cpu = 0.0
    for seed, timed in zip(seeds, run_seeds(seeds, args.minutes, args.jobs), strict=True):
        if args.verbose:
            print("\n".join(draw(seed, args.minutes).describe()))
        out = timed.outcome
        cpu += timed.seconds
        if args.verbose or args.all or not out.ok:
            print(out.line(), flush=True)
        if args.verbose:
            for v in out.violations:
                print(f"  {v.kind}: {v.detail}")
            for note in out.notes:
                print(f"  note: {note}")
            print(f"  {out.requests} requests, {out.scrapes} scrapes, {timed.seconds:.2f} s, "
                  f"digest {out.digest[:16]}")  # fmt: skip
        if not out.ok:
            failed += 1
            print(f"  replay: make sim SEED={seed}"
                  f"{f' SIM_MINUTES={args.minutes}' if args.minutes != 1440 else ''}")  # fmt: skip
            for kind in out.kinds():
                kinds[kind] += 1
                examples.setdefault(kind, seed)
    seconds = time.perf_counter() - started
    days = len(seeds) * args.minutes / 1440
    print(
        f"{len(seeds)} seeds ({days:.1f} simulated days) in {seconds:.1f} s wall, {cpu:.1f} s "
        f"CPU: {len(seeds) / cpu:.2f} seeds per CPU second, {days / cpu * 60:.2f} simulated "
        f"days per CPU minute; {failed} failed"
    )
    for kind, n in kinds.most_common():
        print(f"  {kind}: {n} seeds (e.g. {examples[kind]})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
