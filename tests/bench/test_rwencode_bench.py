"""bench/rwencode.py at a small size: it measures each of its columns (timings are never
asserted)."""

from __future__ import annotations

import pytest

from bench import rwencode


def test_the_encode_benchmark_prints_one_row_of_its_columns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert rwencode.main(["--series", "50", "--repeat", "1"]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "50"
    assert all(float(c) >= 0 for c in cells[1:])
    assert len(rwencode.series(50)) == 50
