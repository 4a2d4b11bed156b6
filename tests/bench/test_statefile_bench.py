"""bench/statefile.py at a small size: each shape saves the same bytes, the parts make only
what the steady minute changed (timings are never asserted)."""

from __future__ import annotations

from bench import statefile


async def test_the_whole_text_and_the_parts_write_the_same_file() -> None:
    whole = await statefile.measure(4, "whole", saves=2, before=None)
    parts = await statefile.measure(4, "parts", saves=2, before=None)
    assert whole.size == parts.size > 0  # the same minutes, the same text
    assert whole.made == whole.size
    assert 0 < parts.made < parts.size  # the series and the new run made, the rest copied
