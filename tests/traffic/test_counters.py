"""A ledger's counted values: increases only, never a subtraction, and the keys a restored
series counts as published."""

from __future__ import annotations

import math

from exporter.traffic.counters import positive_diff, shown_mask
from exporter.traffic.parse import COUNT_INDEX, blank
from tests.traffic.ledger_rows import row

REQ = COUNT_INDEX["edge_requests_total"]
HIT = COUNT_INDEX["edge_hit_bytes"]


def test_positive_diff_adds_increases_and_never_subtracts() -> None:
    new, old = row(10, edge_hit_bytes=5), row(12, edge_hit_bytes=2)
    diff = positive_diff(new.counts, old.counts)
    assert diff is not None
    assert math.isnan(diff[REQ])  # 10 < 12: nothing
    assert diff[COUNT_INDEX["edge_hit_bytes"]] == 3
    assert positive_diff(old.counts, old.counts) is None
    assert positive_diff(row(4).counts, None) is not None  # absent counts as 0


def test_a_restored_series_counts_only_keys_with_a_value_as_shown() -> None:
    values = blank()
    values[REQ] = 7.0
    shown = shown_mask(values)
    assert shown[REQ] == 1
    assert shown[HIT] == 0  # never sent: NaN
