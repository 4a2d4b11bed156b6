"""What a traffic publish costs at a scale: building the fragment and rendering and compressing
it, in process, the minutes after the first (every value changed, as a minute's reply changes
them; every key published before, as in a daemon that has run).

``python -m bench.publish [--scales 5000,25000] [--minutes 3] [--levels 6,3,1]``

Accounts of 1,000 CDN resources (``bench.aged`` builds their ledgers); each minute every
series counts what a minute adds and the latest window gets new rows (counts and gauges), then
``build_fragment`` against the fragment before and ``Fragment.packed`` against it, as
``traffic.persist.Publisher.build`` does. CPU time of the whole process (the compressing
thread's included), medians of the minutes after the first, per deflate level. The samples
built, and the compressed bytes of the last minute. docs/performance.md keeps the figures.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from bench import aged
from exporter.exposition import deflate
from exporter.exposition.model import Fragment
from exporter.simulator.dataset import cdn_resources
from exporter.traffic.counters import shown_mask
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import COUNT_KEYS, GAUGE_KEYS, ResourceRow, Row, add_into
from exporter.traffic.transform import Latest, build_fragment
from exporter.traffic.windows import Window

PER_ACCOUNT = 1000
NOW = 1_767_225_600.0


@dataclass
class Minute:
    build: float  # CPU seconds of build_fragment
    pack: float  # CPU seconds of rendering and compressing it
    series: int
    gzip_bytes: int


def _row(rng: random.Random) -> Row:
    counts = array("d", (float(rng.randrange(10**4)) for _ in COUNT_KEYS))
    gauges = array("d", (rng.random() * 10**6 for _ in GAUGE_KEYS))
    return Row(counts, gauges)


def _cpu(step: Callable[[], Fragment]) -> tuple[Fragment, float]:
    started = time.process_time()
    out = step()
    return out, time.process_time() - started


def run(resources: int, minutes: int, level: int) -> list[Minute]:
    rng = random.Random(7)
    names = [f"bench{i}" for i in range(max(1, resources // PER_ACCOUNT))]
    accounts = [
        aged.Account(n, cdn_resources(i + 1, n, min(PER_ACCOUNT, resources)))
        for i, n in enumerate(names)
    ]
    ledgers: dict[str, AccountLedger] = {a.name: aged.ledger(a, 48.0, NOW, rng) for a in accounts}
    for led in ledgers.values():  # every key published before, as in a daemon that has run
        led.totals_shown[:] = shown_mask(led.totals)
        for s in led.series.values():
            s.shown[:] = shown_mask(s.values)
    deflate.LEVEL = level
    before: dict[str, Fragment | None] = dict.fromkeys(names)
    out = []
    for m in range(minutes):
        end = int(NOW) // 60 * 60 + 60 * m
        build = pack = 0.0
        series = size = 0
        for a in accounts:
            led = ledgers[a.name]
            rows = []
            for r in a.resources:
                row = _row(rng)
                add_into(led.series[r.id].values, row.counts)
                rows.append(ResourceRow(r.id, r.name, r.cname, row))
            latest = Latest(Window(end - 60, end), _row(rng), tuple(rows))
            prev = before[a.name]
            frag, b = _cpu(lambda: build_fragment(a.name, led, latest, previous=prev))  # noqa: B023
            _, p = _cpu(lambda: (frag.packed(prev), frag)[1])  # noqa: B023
            build += b
            pack += p
            series += frag.series_count()
            size += sum(len(pc.data) for ps in frag.packed().values() for pc in ps)
            before[a.name] = frag
        out.append(Minute(build, pack, series, size))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scales", default="5000,25000")
    ap.add_argument("--minutes", type=int, default=3)
    ap.add_argument("--levels", default=f"{deflate.LEVEL}")
    args = ap.parse_args()
    print("resources  level  series  build CPU s  render+deflate CPU s  gzip bytes")
    for scale in (int(s) for s in args.scales.split(",")):
        for level in (int(v) for v in args.levels.split(",")):
            steady = run(scale, args.minutes, level)[1:]
            print(
                f"{scale:>9}  {level:>5}  {steady[-1].series:>6}"
                f"  {statistics.median(m.build for m in steady):>11.2f}"
                f"  {statistics.median(m.pack for m in steady):>20.2f}"
                f"  {steady[-1].gzip_bytes:>10}"
            )


if __name__ == "__main__":
    main()
