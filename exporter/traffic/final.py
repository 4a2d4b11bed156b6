"""The traffic poller's one hook for outputs of final figures (remote write): a run of minutes
whose last settle read is done, with its totals and per-resource values by counted key.

A run whose last read came in pieces (one-minute pieces while the output is on) is told piece
by piece: each piece gets the run's figures in the proportion that piece showed, so a minute
holds the platform's own figure for it and the pieces sum to what the run counted. A run read
whole at the end is told whole (its minutes are known only as the window's sum)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Protocol

from exporter.traffic.counters import unlisted_rest
from exporter.traffic.ledger import OTHER
from exporter.traffic.parse import COUNT_KEYS, Values
from exporter.traffic.runs import Part, Run


class FinalMinutes(Protocol):
    """Told once per run, on the poller's worker thread, before the state file forgets it."""

    def final(
        self,
        account: str,
        start: int,
        end: int,
        totals: Mapping[str, float],
        resources: Mapping[str, Mapping[str, float]],
    ) -> None: ...


def named(values: Values) -> dict[str, float]:
    """Counted values by key (absent keys left out)."""
    return {k: v for k, v in zip(COUNT_KEYS, values, strict=True) if v == v}


def tell(sink: FinalMinutes, account: str, run: Run) -> None:
    """Hand ``run``'s final figures to ``sink``, piece by piece where its last read came in
    pieces (``pieces``); resources folded by ``max_resources`` in the run are summed under
    ``__other__``, as their counters are."""
    parts = pieces(run)
    if parts is None:
        sink.final(account, run.start, run.end, named(run.totals), _labelled(run, run.resources))
        return
    for start, end, totals, resources in parts:
        sink.final(account, start, end, named(totals), _labelled(run, resources))


def pieces(run: Run) -> list[tuple[int, int, Values, dict[str, Values]]] | None:
    """The run's figures shared out over the pieces of its last read: per key, each piece's
    share of the run's counted value is what it showed over what all pieces showed (equal
    shares by length when they showed nothing). None when the last read was whole, or its
    halves came in different pieces."""
    totals = run.shape.get("totals")
    resources = run.shape.get("resources")
    if not totals or len(totals) < 2:
        return None
    windows = [(p.start, p.end) for p in totals]
    if resources is not None and [(p.start, p.end) for p in resources] != windows:
        return None
    if run.resources and resources is None:
        return None  # the per-resource half read whole: its minutes are one sum
    resources = resources or []  # (no resource in the run: no share of one is asked)
    if windows[0][0] != run.start or windows[-1][1] != run.end:
        return None
    if any(a[1] != b[0] for a, b in pairwise(windows)):
        return None
    lengths = [end - start for start, end in windows]
    out_totals = _share(run.totals, [p.totals for p in totals], lengths)
    out_resources: list[dict[str, Values]] = [{} for _ in windows]
    for rid, values in run.resources.items():
        shown = [_shown(t, r, rid) for t, r in zip(totals, resources, strict=True)]
        for i, share in enumerate(_share(values, shown, lengths)):
            out_resources[i][rid] = share
    return [
        (start, end, t, r)
        for (start, end), t, r in zip(windows, out_totals, out_resources, strict=True)
    ]


def _shown(totals: Part, resources: Part, rid: str) -> Values | None:
    """What a piece showed of ``rid``; of ``__other__`` (what no listed resource holds), its
    totals beyond its resources, as the last read counts it (``AccountLedger._unlisted``)."""
    if rid != OTHER:
        return resources.resources.get(rid)
    if totals.totals is None:
        return None
    return unlisted_rest(totals.totals, resources.resources.values())


def _share(total: Values, shown: Sequence[Values | None], lengths: Sequence[int]) -> list[Values]:
    """``total`` shared out in proportion to ``shown`` per key (by ``lengths`` where the
    pieces showed nothing of it); a share equal to what the piece showed when the pieces sum
    to the total (the usual case: figures only rise)."""
    n = len(lengths)
    out = [array("d", total) for _ in range(n)]
    whole = float(sum(lengths))
    for k, value in enumerate(total):
        if value != value:  # the key never sent: absent everywhere
            continue
        seen = [0.0 if s is None or s[k] != s[k] else s[k] for s in shown]
        sum_seen = sum(seen)
        for i in range(n):
            if sum_seen <= 0:
                out[i][k] = value * lengths[i] / whole
            elif sum_seen == value:
                out[i][k] = seen[i]
            else:
                out[i][k] = value * seen[i] / sum_seen
    return out


def _labelled(run: Run, resources: Mapping[str, Values]) -> dict[str, dict[str, float]]:
    """Per resource label: resources folded in the run summed under ``__other__``."""
    out: dict[str, dict[str, float]] = {}
    for rid, values in resources.items():
        label = OTHER if rid in run.folded else rid
        have = out.get(label)
        if have is None:
            out[label] = named(values)
        else:
            for k, v in named(values).items():
                have[k] = have.get(k, 0.0) + v
    return out
