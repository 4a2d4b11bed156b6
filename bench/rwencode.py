"""What a minute's remote-write body costs to encode, and its longest single serialisation.

``python -m bench.rwencode [--series 40000] [--repeat 5]``

A WriteRequest of ``--series`` series (about 40 a resource: 1,000 resources by default, the
labels the per-resource families carry) is built and serialised two ways: in one call (one C
call holding the GIL for the whole request) and as ``wire.encode`` makes it (chunks of
``wire.CHUNK`` series, joined). Medians of ``--repeat`` runs, CPU time: the whole encode, the
one-call serialisation, and the longest chunk's. docs/performance.md (*What remote_write adds*)
keeps the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from exporter.remotewrite import wire


def series(count: int) -> list[wire.Series]:
    return [
        wire.Series(
            (
                ("__name__", "cdnvideo_minute_resource_responses"),
                ("account", "bench"),
                ("resource_id", f"r{i // 40:05d}"),
                ("side", "edge"),
                ("code", str(200 + i % 40)),
            ),
            float(i),
            1_767_225_600_000,
        )
        for i in range(count)
    ]


def _cpu_ms(step: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        step()
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times)


def measure(count: int, repeat: int) -> dict[str, float]:
    all_series = series(count)
    whole = wire.request(all_series)
    chunk = wire.request(all_series[: wire.CHUNK])
    return {
        "series": count,
        "encode_ms": _cpu_ms(lambda: wire.encode(all_series), repeat),
        "one_call_ms": _cpu_ms(lambda: whole.SerializeToString(deterministic=True), repeat),
        "chunk_call_ms": _cpu_ms(lambda: chunk.SerializeToString(deterministic=True), repeat),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.rwencode", description=__doc__)
    p.add_argument("--series", type=int, default=40_000)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    m = measure(a.series, a.repeat)
    print("| series | encode ms (CPU) | serialised in one call ms | longest chunk's call ms |")
    print("|---:|---:|---:|---:|")
    print(
        f"| {m['series']:.0f} | {m['encode_ms']:.1f} | {m['one_call_ms']:.1f} "
        f"| {m['chunk_call_ms']:.2f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
