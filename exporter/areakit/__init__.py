"""What every area package builds on: the ``Area`` protocol and its ``Job``s, the context an
area is built from, the ``AreaDeclaration`` an area package exports (one per area) and the
``LandingPart`` it declares."""

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
from exporter.areakit.page import AccountView, Finding, LandingPart

__all__ = [
    "SPREAD_SLICES",
    "AccountView",
    "Area",
    "AreaContext",
    "AreaCost",
    "AreaDeclaration",
    "AreaMetrics",
    "Finding",
    "Job",
    "LandingPart",
    "NothingToWatch",
    "QuietArea",
    "Runner",
    "afforded",
    "reload_applies",
    "spread_slices",
]
