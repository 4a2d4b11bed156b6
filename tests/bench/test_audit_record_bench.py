"""bench/auditrecord.py at a small size: every shape is measured, the pieces are written and
a minute's save adds a few lines (timings are never asserted)."""

from __future__ import annotations

from bench import auditrecord


async def test_the_bench_measures_each_shape() -> None:
    rows = await auditrecord.measure(accounts=2, hours=1, saves=2)
    assert [r[0] for r in rows] == [
        "whole file (before)",
        "pieces, first save (upgrade)",
        "pieces, a minute's save",
        "pieces, a minute's save",
    ]
    whole, upgrade, first, second = (r[4] for r in rows)
    assert whole > 0
    assert upgrade > whole * 0.9  # the same windows, in pieces
    assert 0 < second - first < 2 * 2_000  # two lines (and the head's change) per save
