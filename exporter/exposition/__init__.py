"""Metric families as immutable fragments, rendered once per refresh and served as bytes."""

from exporter.exposition.model import Fragment, FragmentBuilder, MetricSpec, Sample
from exporter.exposition.store import Exposition, Store, StoreKey

__all__ = ["Exposition", "Fragment", "FragmentBuilder", "MetricSpec", "Sample", "Store", "StoreKey"]
