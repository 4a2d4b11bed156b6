"""What every area package builds on: the ``Area`` protocol and its ``Job``s, the context an
area is built from, and the ``AreaDeclaration`` an area package exports (one per area)."""

from exporter.areakit.area import (
    SPREAD_SLICES,
    Area,
    AreaContext,
    Job,
    NothingToWatch,
    QuietArea,
    Runner,
    afforded,
    spread_slices,
)
from exporter.areakit.declaration import AreaCost, AreaDeclaration, reload_applies
from exporter.areakit.metrics import AreaMetrics

__all__ = [
    "SPREAD_SLICES",
    "Area",
    "AreaContext",
    "AreaCost",
    "AreaDeclaration",
    "AreaMetrics",
    "Job",
    "NothingToWatch",
    "QuietArea",
    "Runner",
    "afforded",
    "reload_applies",
    "spread_slices",
]
