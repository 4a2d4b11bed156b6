"""A counter series appears at 0 and rises only by what is counted after it appears.

The ledger counts every key whether or not it is exported; the part of a count Prometheus was
never shown (a family ``metrics.include``/``exclude`` left out, per-code keys while
``resource_status_codes`` is ``classes``, the lateness counters left out) is dropped when its
key becomes exported, by a reload (``newly`` of the views before and after) or at a restart
(the keys the state file says were not exported). A key this process published before
(``shown``) that a reload left out and takes back goes on from its whole count. Per family
and series: the exported keys of each scope (``families.exported_keys``), whatever families
they belong to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from exporter.traffic.counters import LATE_PARTS
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import COUNT_INDEX, Values

Keys = Mapping[str, Sequence[str]]  # per scope (account, resource, late): exported key names


def newly(before: Keys, after: Keys) -> dict[str, list[str]]:
    """Per scope, the keys ``after`` exports that ``before`` did not."""
    return {
        scope: [k for k in keys if k not in before.get(scope, ())] for scope, keys in after.items()
    }


def start_at_zero(led: AccountLedger, keys: Keys) -> bool:
    """Set to 0 the counts of ``keys`` never published (not ``shown``) that hold one
    (absent keys stay absent): what was counted before they were exported is never shown,
    and each appears at 0 first (until a scrape has read it: ``transform._counters``). A key
    published before (a family a reload left out and takes back) goes on from its whole
    count: a counter never goes down, and ``increase()`` across the gap is what the platform
    counted. Returns whether any count changed."""
    changed = _zero(led.totals, led.totals_shown, _slots(keys.get("account", ())))
    slots = _slots(keys.get("resource", ()))
    for series in led.series.values():
        changed = _zero(series.values, series.shown, slots) or changed
    late = [p for p in LATE_PARTS if p in keys.get("late", ())]
    for entry in led.late.values():
        if "requests" in late and "requests" not in entry.shown and entry.requests:
            entry.requests, changed = 0.0, True
        if "hit_bytes" in late and "hit_bytes" not in entry.shown and entry.hit_bytes:
            entry.hit_bytes, changed = 0.0, True
    return changed


def hidden(exported: Keys) -> dict[str, list[str]]:
    """Per scope, the keys ``exported`` (as a state file lists them) left out; a scope it
    does not list (files before it was saved) counts as all exported."""
    every: dict[str, Iterable[str]] = {
        "account": COUNT_INDEX,
        "resource": COUNT_INDEX,
        "late": LATE_PARTS,
    }
    return {
        scope: [k for k in names if k not in exported[scope]]
        for scope, names in every.items()
        if scope in exported
    }


def _slots(names: Iterable[str]) -> list[int]:
    return [COUNT_INDEX[n] for n in names if n in COUNT_INDEX]


def _zero(values: Values, shown: bytearray, slots: list[int]) -> bool:
    changed = False
    for i in slots:
        v = values[i]
        if not shown[i] and v == v and v != 0.0:
            values[i] = 0.0
            changed = True
    return changed
