"""What the landing page shows of one account: each area's summary, as typed values the area
derives from what it published (its own fragment, read through its own MetricSpecs;
``AreaDeclaration.summary``), so the page renders these and knows no metric name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from exporter.exposition import Store
from exporter.runtime.registry import declarations

T = TypeVar("T")


@dataclass(frozen=True)
class AccountSummary:
    """The summaries of the areas that declare one, by area name, in the registry's order."""

    areas: Mapping[str, object]

    def of(self, kind: type[T]) -> T:
        """The one summary of type ``kind`` (``s.of(TrafficSummary)``)."""
        for summary in self.areas.values():
            if isinstance(summary, kind):
                return summary
        raise KeyError(kind.__name__)


def account_summary(store: Store, account: str) -> AccountSummary:
    """The landing page's figures of ``account``, from what the areas published."""
    return AccountSummary(
        {d.name: d.summary(store, account) for d in declarations() if d.summary is not None}
    )
