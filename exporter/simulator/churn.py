"""Resources added, renamed and deleted while the platform runs (quirk ``resource-churn``).

With the quirk on, each account's resource list changes once every ``CHURN_SECONDS`` after
the simulator started: a resource is added, one is renamed, or one is deleted (never the
last one), drawn from the seed. A change takes effect from the next minute boundary: a new
resource has traffic from that minute on, a deleted one none from that minute on (its
earlier minutes stay as they were, late data included), a renamed one keeps its id and
cname and is named anew in every reply from then on. Changes are applied when the account's
figures are next asked for, in order, each at its own time, so the result does not depend
on when anyone asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from exporter.simulator.hashing import Stream, key_hash

CHURN_SECONDS = 1200  # one change an account every 20 minutes


@dataclass(frozen=True)
class Change:
    """One change of an account's resource list, effective from minute boundary ``at``."""

    at: int
    account: str
    kind: str  # "add", "rename" or "delete"
    resource: str  # the resource's id
    name: str = ""  # its name from then on (an add or a rename)


def boundary(t: float) -> int:
    """The first minute boundary at or after ``t``."""
    return math.ceil(t / 60.0) * 60


def due(started_at: float, now: float) -> int:
    """How many changes are due by ``now`` (the first one ``CHURN_SECONDS`` after start)."""
    return max(0, int((now - started_at) // CHURN_SECONDS))


def draw(seed: int, account: str, k: int, alive: list[str]) -> tuple[str, str]:
    """Change number ``k`` (1-based) of ``account``: its kind and, for a rename or a delete,
    the resource (one of ``alive``, the ids with traffic now; "" for an add)."""
    rnd = Stream(key_hash(seed, "churn", account, k))
    kinds = ("add", "rename", "delete") if len(alive) > 1 else ("add", "rename")
    kind = kinds[rnd.integer(0, len(kinds) - 1)]
    if kind == "add" or not alive:
        return "add", ""
    return kind, alive[rnd.integer(0, len(alive) - 1)]
