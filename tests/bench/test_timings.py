"""bench/timings.py runs every job once and prints one figure per job (the figures are read by
people, never bounded by a test)."""

from __future__ import annotations

import pytest

from bench import timings


def test_every_timing_prints_one_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert timings.main(["--runs", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.rsplit(None, 1)[0].strip() for row in rows] == list(timings.JOBS)
    assert all(float(row.rsplit(None, 1)[1]) >= 0 for row in rows)
