"""Pure step: a run of final minutes of one account -> the true-time samples of each minute.

For a run of one minute (the steady state with the output on) the samples are the platform's
own figures for that minute. A longer run (minutes caught up after an outage in one window,
whose figure is the window's sum) is spread evenly: each of its minutes gets figure / minutes.

    cdnvideo_minute_account_requests{account="demo-media",side="edge"} 8123 @1764150000000
    cdnvideo_minute_account_responses{account="demo-media",code="404",side="edge"} 12 @...
    cdnvideo_minute_resource_requests{account="demo-media",resource="101",side="edge"} 910 @...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from exporter.remotewrite.wire import Series
from exporter.support.platform_fields import SIDES, STATUS_CODES

MINUTE = 60
ACCOUNT_REQUESTS = "cdnvideo_minute_account_requests"
ACCOUNT_BYTES = "cdnvideo_minute_account_transferred_bytes"
ACCOUNT_RESPONSES = "cdnvideo_minute_account_responses"
RESOURCE_REQUESTS = "cdnvideo_minute_resource_requests"
RESOURCE_BYTES = "cdnvideo_minute_resource_transferred_bytes"
FAMILIES = (ACCOUNT_REQUESTS, ACCOUNT_BYTES, ACCOUNT_RESPONSES, RESOURCE_REQUESTS, RESOURCE_BYTES)
# Specific codes only (as the `code` families of /metrics): a class key (`5xx`) is left out.
CODES = tuple(c for c in STATUS_CODES if not c.endswith("xx"))

Figures = Mapping[str, float]  # counted key of the platform (edge_requests_total, ...) -> value


@dataclass(frozen=True, slots=True)
class FinalRun:
    """The final figures of the minutes [start, end) of one account: totals and, per
    ``resource`` label (``__other__`` for resources folded by ``max_resources``), its own."""

    account: str
    start: int
    end: int
    totals: Figures
    resources: Mapping[str, Figures]

    @property
    def minutes(self) -> range:
        return range(self.start, self.end, MINUTE)


def _keyed(figures: Figures) -> Iterator[tuple[str, tuple[tuple[str, str], ...], float]]:
    """(family kind, labels, value) of one set of figures: requests, bytes, responses."""
    for side in SIDES:
        v = figures.get(f"{side}_requests_total")
        if v is not None:
            yield "requests", (("side", side),), v
        v = figures.get(f"{side}_transferred_bytes")
        if v is not None:
            yield "bytes", (("side", side),), v
        for code in CODES:
            v = figures.get(f"{side}_status_{code}")
            if v is not None:
                yield "responses", (("side", side), ("code", code)), v


_ACCOUNT = {"requests": ACCOUNT_REQUESTS, "bytes": ACCOUNT_BYTES, "responses": ACCOUNT_RESPONSES}
_RESOURCE = {"requests": RESOURCE_REQUESTS, "bytes": RESOURCE_BYTES}


def minute_series(run: FinalRun, wants: Callable[[str], bool]) -> dict[int, list[Series]]:
    """Per minute start of the run, its samples (families ``wants`` refuses are not made),
    timestamped at the minute's start in milliseconds."""
    n = len(run.minutes)
    base: list[tuple[tuple[tuple[str, str], ...], float]] = []
    who = (("account", run.account),)
    for kind, labels, value in _keyed(run.totals):
        name = _ACCOUNT[kind]
        if wants(name):
            base.append(((("__name__", name), *who, *labels), value / n))
    for resource, figures in sorted(run.resources.items()):
        for kind, labels, value in _keyed(figures):
            rname = _RESOURCE.get(kind)
            if rname is not None and wants(rname):
                base.append(
                    ((("__name__", rname), *who, ("resource", resource), *labels), value / n)
                )
    return {m: [Series(lb, v, m * 1000) for lb, v in base] for m in run.minutes}
