"""``python -m bench.simulation [--seeds 0:3] [--minutes 240]``: how fast the deterministic
simulation (tests/simulation) runs, in simulated days per CPU minute.

A fixed batch of seeds runs in this process, one after the other; the CPU time is each seed's
own (``time.process_time`` around its run, as ``python -m tests.simulation`` counts it), so
the figure holds on a machine that other work shares. ``python -m bench`` prints it after its
tables; docs/performance.md says where a simulated minute's time goes.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TARGET_DAYS_PER_CPU_MINUTE = 10.0  # issue 48: CI proves 30 simulated days in a few minutes
SEEDS = "0:3"
MINUTES = 240
HEADERS = ("simulation batch", "simulated days", "CPU s", "simulated days / CPU min", "target")


@dataclass(frozen=True)
class SimRate:
    """One batch: seeds ``first`` to ``end`` (excluded) of ``minutes`` simulated minutes."""

    first: int
    end: int
    minutes: int
    cpu_seconds: float
    failed: int

    @property
    def days(self) -> float:
        return (self.end - self.first) * self.minutes / 1440

    @property
    def days_per_cpu_minute(self) -> float:
        return self.days / self.cpu_seconds * 60 if self.cpu_seconds > 0 else 0.0

    @property
    def met(self) -> bool:
        return self.days_per_cpu_minute >= TARGET_DAYS_PER_CPU_MINUTE

    def row(self) -> tuple[str, ...]:
        batch = f"seeds {self.first}:{self.end} x {self.minutes} min"
        if self.failed:
            batch += f" ({self.failed} failed)"
        verdict = "met" if self.met else "**missed**"
        return (
            batch,
            f"{self.days:.2f}",
            f"{self.cpu_seconds:.1f}",
            f"{self.days_per_cpu_minute:.2f}",
            f">= {TARGET_DAYS_PER_CPU_MINUTE:.0f}: {verdict}",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "seeds": f"{self.first}:{self.end}",
            "minutes": self.minutes,
            "simulated_days": self.days,
            "cpu_seconds": self.cpu_seconds,
            "days_per_cpu_minute": self.days_per_cpu_minute,
            "failed": self.failed,
        }


def seeds(text: str) -> tuple[int, int]:
    """``FIRST:END`` (END excluded) as two numbers; a clear error otherwise."""
    first, sep, end = text.partition(":")
    wrong = argparse.ArgumentTypeError(f"expected seeds as FIRST:END with END > FIRST: {text!r}")
    try:
        a, b = int(first), int(end)
    except ValueError:
        raise wrong from None
    if not sep or a < 0 or b <= a:
        raise wrong
    return a, b


def measure(first: int, end: int, minutes: int) -> SimRate:
    """Run the batch here, seed after seed, and add up their CPU time."""
    from tests.simulation.harness import run_seed  # the repository's tests: bench runs there

    cpu = 0.0
    failed = 0
    for seed in range(first, end):
        timed = asyncio.run(run_seed(seed, minutes))
        cpu += timed.seconds
        failed += not timed.outcome.ok
    return SimRate(first, end, minutes, cpu, failed)


def text_table(rate: SimRate) -> str:
    cells = [HEADERS, rate.row()]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADERS))]
    return "\n".join("  ".join(c[i].rjust(widths[i]) for i in range(len(c))) for c in cells)


def markdown_table(rate: SimRate) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|---|---:|---:|---:|---|"]
    return "\n".join([*lines, "| " + " | ".join(rate.row()) + " |"])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.simulation", description=__doc__)
    p.add_argument("--seeds", type=seeds, default=seeds(SEEDS), help=f"default {SEEDS}")
    p.add_argument("--minutes", type=int, default=MINUTES, help=f"default {MINUTES}")
    args = p.parse_args(argv)
    if args.minutes < 1:
        p.error(f"--minutes must be at least 1, got {args.minutes}")
    print(text_table(measure(*args.seeds, args.minutes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
