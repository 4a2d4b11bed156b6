"""The benchmark runs end to end at a tiny scale and writes well-formed tables (no timings):
the main one, what it costs the platform and Prometheus (without a Prometheus here:
tests/bench/test_bench_prometheus.py runs one), the targets and the simulation's rate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import cost
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
            "--simulation-seeds", "0:1", "--simulation-minutes", "10",
            "--no-prometheus"]  # fmt: skip
    lines = bench_lines(args, timeout=120)
    blank = lines.index("")
    table, rest = lines[:blank], lines[blank + 1 :]
    after = rest.index("")
    costs, rest = rest[:after], rest[after + 1 :]
    after = rest.index("")
    goals, sim = rest[:after], rest[after + 1 :]
    assert table[0].split() == " ".join(HEADERS).split()
    assert [row.split()[0] for row in table[2:]] == ["4"]
    # what it costs: samples and bytes of both formats, requests a minute beside the estimate
    assert costs[0].split() == " ".join(cost.HEADERS).split()
    (row,) = costs[2:]
    samples, text_bytes, om_bytes, *upstream = row.split()[1:-4]
    text_samples, om_samples = samples.split("/")
    assert int(text_samples) == int(om_samples) > 0
    assert all(size != "0" for size in (*text_bytes.split("/"), *om_bytes.split("/")))
    # traffic 2.4 (2 reads a minute, a settle read in 5), restream 4 + 1/60 per resource,
    # DVR 1 stream a minute, talking-head once in 6 h
    estimates = [cell.strip("()") for cell in upstream[1::2]]
    assert estimates == ["2.4", "4.0", "1.0", "0.0", "7.4"]
    assert row.split()[-4:] == ["n/a"] * 4  # no Prometheus
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
    # header, rule, the scale; the same for the cost; the targets; the simulation
    assert len(rows) == 3 + 3 + 2 + len(TARGETS) + 3
    assert all(line.count("|") == len(HEADERS) + 1 for line in rows[:3])
    assert all(line.count("|") == len(cost.HEADERS) + 1 for line in rows[3:6])
    assert "- Prometheus at 4 resources: not run: --no-prometheus" in markdown

    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert payload["simulation"]["seeds"] == "0:1"
    assert payload["simulation"]["failed"] == 0
    assert payload["simulation"]["days_per_cpu_minute"] > 0
    results = payload["results"]
    assert [r["resources"] for r in results] == [4]
    for r in results:
        assert r["series"] > 0
        assert r["openmetrics_samples"] == r["series"]
        assert 0 < r["bytes_openmetrics_gzip"] < r["bytes_openmetrics_plain"]
        assert r["upstream_estimate"]["traffic"] == 2.4
        assert r["prometheus"] is None
        assert r["prometheus_note"] == "not run: --no-prometheus"
        assert 0 < r["bytes_gzip"] < r["bytes_plain"]
        assert r["samples"]["exporter_scrapes"] > 0
        assert r["samples"]["baseline_scrapes"] > 0
        assert r["samples"]["refreshes"] > 0
        assert r["rss_mb"] > 0
        assert 40 < r["storage_bytes_per_series"] < 200  # label tuple, pointer, double
        assert r["floor_ratio"] > 0
