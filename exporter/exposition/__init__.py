"""Metric families as immutable fragments, rendered once per refresh and served as bytes."""

from exporter.exposition.model import Fragment, FragmentBuilder, MetricSpec, Sample
from exporter.exposition.select import EVERYTHING, FamilySelection
from exporter.exposition.store import Exposition, Store, StoreKey

__all__ = [
    "EVERYTHING",
    "Exposition",
    "FamilySelection",
    "Fragment",
    "FragmentBuilder",
    "MetricSpec",
    "Sample",
    "Store",
    "StoreKey",
]
