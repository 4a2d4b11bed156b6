"""Metric families as immutable fragments, rendered once per refresh and served as bytes."""

from exporter.exposition.model import Fragment, FragmentBuilder, MetricSpec
from exporter.exposition.samples import Sample, Samples
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
    "Samples",
    "Store",
    "StoreKey",
]
