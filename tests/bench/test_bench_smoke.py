"""The benchmark runs end to end at a tiny scale and writes a well-formed table (no timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.report import HEADERS
from bench.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]


def bench_lines(args: list[str], timeout: float) -> list[str]:
    """What ``python -m bench ARGS`` prints, less its comment lines; it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("#")]


def test_bench_runs_at_a_tiny_scale_and_writes_a_well_formed_table(tmp_path: Path) -> None:
    args = ["--scales", "4", "--quick", "--steady-seconds", "2", "--out", str(tmp_path),
            "--simulation-seeds", "0:1", "--simulation-minutes", "10"]  # fmt: skip
    lines = bench_lines(args, timeout=120)
    blank = lines.index("")
    table, goals = lines[:blank], lines[blank + 1 :]
    after = goals.index("")
    goals, sim = goals[:after], goals[after + 1 :]
    assert table[0].split() == " ".join(HEADERS).split()
    assert [row.split()[0] for row in table[2:]] == ["4"]
    # the targets, met or missed (or n/a), one line each at the scale
    assert goals[0].split() == ["resources", "target", "limit", "measured"]
    assert len(goals[2:]) == len(TARGETS)
    for line, target in zip(goals[2:], TARGETS, strict=True):
        assert line.startswith("4 ")
        assert target.name in line
        assert line.split()[-1] in ("met", "MISSED", "n/a")
    # the simulation's rate: one seed of 10 simulated minutes
    assert sim[0].split()[:3] == ["simulation", "batch", "simulated"]
    assert sim[1].split()[:6] == ["seeds", "0:1", "x", "10", "min", f"{10 / 1440:.2f}"]

    markdown = (tmp_path / "results.md").read_text(encoding="utf-8").splitlines()
    rows = [line for line in markdown if line.startswith("|")]
    assert len(rows) == 3 + 2 + len(TARGETS) + 3  # header, rule, the scale; the targets; sim
    assert all(line.count("|") == len(HEADERS) + 1 for line in rows[:3])

    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert payload["simulation"]["seeds"] == "0:1"
    assert payload["simulation"]["failed"] == 0
    assert payload["simulation"]["days_per_cpu_minute"] > 0
    results = payload["results"]
    assert [r["resources"] for r in results] == [4]
    for r in results:
        assert r["series"] > 0
        assert 0 < r["bytes_gzip"] < r["bytes_plain"]
        assert r["samples"]["exporter_scrapes"] > 0
        assert r["samples"]["baseline_scrapes"] > 0
        assert r["samples"]["refreshes"] > 0
        assert r["rss_mb"] > 0
        assert 40 < r["storage_bytes_per_series"] < 200  # label tuple, pointer, double
        assert r["floor_ratio"] > 0
