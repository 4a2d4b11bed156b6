"""The traffic poller's one hook for outputs of final figures (remote write): a run of minutes
whose last settle read is done, with its totals and per-resource values by counted key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from exporter.traffic.ledger import OTHER, Run
from exporter.traffic.parse import COUNT_KEYS, Values


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
    """Hand ``run``'s final figures to ``sink``; resources folded by ``max_resources`` in the
    run are summed under ``__other__``, as their counters are."""
    resources: dict[str, dict[str, float]] = {}
    for rid, values in run.resources.items():
        label = OTHER if rid in run.folded else rid
        have = resources.get(label)
        if have is None:
            resources[label] = named(values)
        else:
            for k, v in named(values).items():
                have[k] = have.get(k, 0.0) + v
    sink.final(account, run.start, run.end, named(run.totals), resources)
