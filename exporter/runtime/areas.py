"""The areas of one running exporter, built from the registry's declarations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from exporter.areakit import Area, AreaContext
from exporter.runtime.registry import declarations
from exporter.talking_head.area import TalkingHeadArea
from exporter.traffic.area import TrafficArea

A = TypeVar("A")


class Areas:
    """The areas of one running exporter, built once from the registry."""

    def __init__(self, ctx: AreaContext) -> None:
        self._areas: tuple[Area, ...] = tuple(d.build(ctx) for d in declarations())
        self._ctx = ctx

    def __iter__(self) -> Iterator[Area]:
        return iter(self._areas)

    def enabled(self) -> list[Area]:
        return [a for a in self._areas if a.enabled(self._ctx.settings)]

    def get(self, kind: type[A]) -> A:
        """The area of this class (typed access for the parts that use one area directly)."""
        for area in self._areas:
            if isinstance(area, kind):
                return area
        raise LookupError(kind.__name__)

    @property
    def traffic(self) -> TrafficArea:
        return self.get(TrafficArea)

    @property
    def talking_head(self) -> TalkingHeadArea:
        return self.get(TalkingHeadArea)
