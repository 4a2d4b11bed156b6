"""What a save of the traffic state file costs, the whole text made at every save against the
parts (``exporter.support.partfile``), side by side in one run.

``python -m bench.statefile [--scales 1000,5000,25000] [--saves 5] [--before COMMIT]``

At each scale (accounts of 1,000 CDN resources, as ``bench.aged`` builds their ledgers after
48 h: a series per resource and the runs owed a settle read, one per minute), a first save,
then ``--saves`` steady minutes, each changing only what the newest minute changes: every
resource's series counts what it added, the oldest run is settled and dropped, a run of the
newest minute is added. Each save runs on the refresh worker, as the daemon's does, while a
1 ms ticker on the event loop measures how late it runs. Shapes:

- ``whole``: ``state.dump`` and ``write_atomic`` (the whole text made at every save);
- ``before``: with ``--before COMMIT``, that commit's ``exporter/traffic/state.py`` (read with
  ``git show``) saving as the daemon did there: its ``dump`` with the ``Texts`` it kept from one
  save to the next, then ``write_atomic``;
- ``parts``: ``state.pieces`` written by a ``PartFile`` (as ``persist.StateFile`` does).

For each: the CPU time and wall time of a steady save (medians), the bytes written and, of
them, the bytes made (the rest copied from the file before), the worst stall of the loop, and
the longest single C call of a save (CPU; a call that runs no Python code holds the GIL
throughout; measured in a pass of its own under a profile hook, which slows the rest).
docs/performance.md (*The state file's save*) keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import aged
from bench.auditrecord import worst_lateness
from exporter.simulator.dataset import cdn_resources
from exporter.support import offloop
from exporter.support.partfile import PartFile
from exporter.traffic import state
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import add_into
from exporter.traffic.runs import Run

PER_ACCOUNT = 1000
NOW = 1_767_225_600.0 + 48 * 3600.0

Save = Callable[[dict[str, AccountLedger], float], tuple[int, int]]  # bytes written, made


@dataclass
class Row:
    scale: int
    shape: str
    cpu: float  # seconds, median of the steady saves
    wall: float
    size: int  # bytes written by the last save
    made: int  # of them, made by Python (the rest copied from the file before)
    stall: float  # the loop's worst stall over the steady saves
    longest: float  # the longest single C call of one steady save (CPU)
    first_cpu: float  # the first save (nothing to copy from)


def module_at(commit: str) -> types.ModuleType:
    """``exporter/traffic/state.py`` as it was at ``commit``, as a module of its own."""
    src = subprocess.run(
        ["git", "show", f"{commit}:exporter/traffic/state.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mod = types.ModuleType(f"state_at_{commit}")
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{commit}:exporter/traffic/state.py", "exec"), mod.__dict__)
    return mod


def ledgers(scale: int) -> dict[str, AccountLedger]:
    rng = random.Random(11)
    out = {}
    for i in range(max(1, scale // PER_ACCOUNT)):
        name = f"account-{i + 1:02d}"
        account = aged.Account(name, cdn_resources(i + 1, name, min(scale, PER_ACCOUNT)))
        out[name] = aged.ledger(account, 48, NOW, rng)
    return out


def next_minute(leds: dict[str, AccountLedger], now: float, rng: random.Random) -> None:
    """What one steady minute changes: the series' counts, the oldest run settled, a new run."""
    for led in leds.values():
        assert led.cursor is not None
        led.cursor += 60
        minute = {rid: aged._counts(rng, 1 / 2880) for rid in led.series}
        for rid, values in minute.items():
            series = led.series[rid]
            add_into(series.values, values)
            series.last_seen = now
        totals = aged._counts(rng, len(minute) / 2880)
        add_into(led.totals, totals)
        led.pending.pop(0)
        led.pending.append(Run(led.cursor, led.cursor + 60, now, totals, minute))


def whole(path: str, module: Any, texts: Any) -> Save:
    def save(leds: dict[str, AccountLedger], now: float) -> tuple[int, int]:
        data = module.dump(leds, now) if texts is None else module.dump(leds, now, None, texts)
        module.write_atomic(path, data)
        return len(data), len(data)

    return save


def parts(path: str) -> Save:
    file = PartFile(path)

    def save(leds: dict[str, AccountLedger], now: float) -> tuple[int, int]:
        written = file.write(state.pieces(leds, now))
        return written.size, written.size - written.copied_bytes

    return save


def longest_c_call(step: Callable[[], object]) -> float:
    """The CPU time of the longest C call ``step`` makes that runs no Python code."""
    longest, last = 0.0, (None, 0.0)

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal longest, last
        now = time.thread_time()
        if event in ("c_return", "c_exception") and last[0] == "c_call":
            longest = max(longest, now - last[1])
        last = (event, time.thread_time())

    sys.setprofile(hook)
    try:
        step()
    finally:
        sys.setprofile(None)
    return longest


async def measure(scale: int, shape: str, saves: int, before: str | None) -> Row:
    leds, rng, now = ledgers(scale), random.Random(5), NOW
    loop = asyncio.get_running_loop()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "traffic.json")
        if shape == "parts":
            save = parts(path)
        elif shape == "before":
            assert before is not None
            old = module_at(before)
            save = whole(path, old, old.Texts())
        else:
            save = whole(path, state, None)

        def timed() -> tuple[float, float, int, int]:
            cpu, wall = time.thread_time(), time.perf_counter()
            size, made = save(leds, now)
            return time.thread_time() - cpu, time.perf_counter() - wall, size, made

        first_cpu = (await loop.run_in_executor(offloop.WORKER, timed))[0]
        got: list[tuple[float, float, int, int]] = []

        async def step() -> None:
            got.append(await loop.run_in_executor(offloop.WORKER, timed))

        stall = 0.0
        for _ in range(saves):
            now += 60
            next_minute(leds, now, rng)
            stall = max(stall, (await worst_lateness(step))[0])
        now += 60
        next_minute(leds, now, rng)
        longest = await loop.run_in_executor(
            offloop.WORKER, longest_c_call, lambda: save(leds, now)
        )
    return Row(
        scale,
        shape,
        statistics.median(g[0] for g in got),
        statistics.median(g[1] for g in got),
        got[-1][2],
        got[-1][3],
        stall,
        longest,
        first_cpu,
    )


def main() -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.statefile", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--scales", default="1000,5000,25000")
    p.add_argument("--saves", type=int, default=5)
    p.add_argument("--before", default=None, help="a commit to measure side by side")
    args = p.parse_args()
    shapes = (["before"] if args.before else []) + ["whole", "parts"]
    print(
        f"{'resources':>9} {'shape':<7} {'cpu':>8} {'wall':>8} {'written':>12} {'made':>12} "
        f"{'stall':>8} {'longest':>8} {'first':>8}"
    )
    for scale in (int(s) for s in args.scales.split(",")):
        for shape in shapes:
            r = asyncio.run(measure(scale, shape, args.saves, args.before))
            print(
                f"{r.scale:>9} {r.shape:<7} {r.cpu * 1000:>6.0f}ms {r.wall * 1000:>6.0f}ms "
                f"{r.size:>12,} {r.made:>12,} {r.stall * 1000:>6.1f}ms "
                f"{r.longest * 1000:>6.1f}ms {r.first_cpu * 1000:>6.0f}ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
