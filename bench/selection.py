"""What choosing families saves: series, bytes and render time per refresh, side by side.

``python -m bench.selection [--resources 1000] [--renders 5]``

The simulator serves one account with N CDN resources on 127.0.0.1; the traffic poller reads
it once per setting of docs/metrics.md's "Choosing families" table (the same instant of an
injected clock, so every setting sees the same data). For each setting the store's fragments
are rendered anew ``--renders`` times (a fresh fragment is packed again, as after a poll) and
the median render time, the series and the gzip size of the exposition are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time

import structlog

from exporter.docgen.seriescount import SETTINGS, each_setting
from exporter.exposition import Fragment, Store


def render_seconds(store: Store, renders: int) -> tuple[float, int, int]:
    """(median seconds of a full render, series, gzip bytes) of what ``store`` holds."""
    times = []
    exposition = store.render_sync()
    for _ in range(renders):
        start = time.perf_counter()
        for key in list(store.keys()):
            fragment = store.fragment(key)
            assert fragment is not None
            # packed anew, not against the last one: as after a poll where every value changed
            fresh = Fragment(fragment.samples)
            fresh.packed()
            store.publish(key, fresh)
        exposition = store.render_sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), exposition.series, len(exposition.gzipped)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.selection", description=__doc__)
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--renders", type=int, default=5)
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    stores = asyncio.run(each_setting(args.resources))
    rows = [render_seconds(store, args.renders) for store in stores]
    base_s = rows[0][0]
    print(f"traffic of one account with {args.resources} resources")
    print(f"{'setting':<72} {'series':>8} {'gzip kB':>8} {'render ms':>10} {'vs default':>10}")
    for setting, (seconds, series, size) in zip(SETTINGS, rows, strict=True):
        print(
            f"{setting.label:<72} {series:>8} {size / 1000:>8.0f} {seconds * 1000:>10.1f} "
            f"{seconds / base_s:>9.2f}x"
        )


if __name__ == "__main__":
    main()
