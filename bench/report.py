"""The results table (aligned text and markdown), the JSON dump and the cost plot."""

from __future__ import annotations

import importlib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from bench import cost, simulation, targets
from bench.fmt import number as _f
from bench.fmt import size as _size
from bench.scale import Result

HEADERS = (
    "resources",
    "restream/DVR",
    "series",
    "bytes plain/gzip",
    "exporter p50/p99 ms",
    "scrape / floor",
    "baseline p50/p99 ms",
    "ratio p50",
    "static body p50 ms (CPU user+sys ms)",
    "exporter headers ms (CPU user+sys ms/scrape)",
    "stall ms healthz/probe/slice (gc)",
    "refresh s (polls/swap)",
    "CPU s/min (% core)",
    "RSS MB (peak)",
    "bytes/series stored (RSS)",
    "upstream req/min (traffic/acct)",
)


def row(r: Result) -> tuple[str, ...]:
    return (
        str(r.resources),
        f"{r.restreams}/{r.dvr_streams}",
        str(r.series),
        f"{_size(r.bytes_plain)}/{_size(r.bytes_gzip)}",
        f"{_f(r.exporter_p50_ms, 2)}/{_f(r.exporter_p99_ms, 2)}",
        f"{_f(r.floor_ratio, 2)}x",
        f"{_f(r.baseline_p50_ms)}/{_f(r.baseline_p99_ms)}",
        f"{_f(r.ratio, 0)}x",
        f"{_f(r.static_p50_ms, 2)} "
        f"({_f(r.static_user_cpu_per_scrape_ms, 2)}+{_f(r.static_sys_cpu_per_scrape_ms, 2)})",
        f"{_f(r.exporter_headers_p50_ms, 2)} "
        f"({_f(r.exporter_user_cpu_per_scrape_ms, 2)}+{_f(r.exporter_sys_cpu_per_scrape_ms, 2)})",
        f"{_f(r.stall_healthz_ms, 0)}/{_f(r.stall_probe_ms, 0)}/{_f(r.slice_ms, 0)} "
        f"({_f(r.gc_pause_ms, 0)})",
        f"{_f(r.refresh_s, 2)} ({_f(r.refresh_poll_s, 2)}/{_f(r.swap_s, 2)})",
        f"{_f(r.cpu_s_per_min, 2)} ({_f(r.cpu_percent, 1)}%)",
        f"{_f(r.rss_mb, 0)} ({_f(r.peak_rss_mb, 0)})",
        f"{_f(r.storage_bytes_per_series, 0)} ({_f(r.rss_bytes_per_series, 0)})",
        f"{_f(r.upstream_per_min, 1)} ({_f(r.traffic_per_min_per_account, 1)})",
    )


def aligned(headers: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """``rows`` under ``headers`` as right-aligned text columns."""
    every = [headers, *rows]
    widths = [max(len(r[i]) for r in every) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in every]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(headers: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---:|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def text_table(results: Sequence[Result]) -> str:
    return aligned(HEADERS, [row(r) for r in results])


def markdown_table(results: Sequence[Result]) -> str:
    return markdown(HEADERS, [row(r) for r in results])


AGED_HEADERS = (
    "resources (accounts)",
    "start",
    "restart to ready s (traffic)",
    "worst /healthz ms (> 50 ms)",
    "CPU s/min",
    "RSS MB (peak)",
    "state + cursors",
    "audit record (files)",
    "remote-write store (files)",
    "charts",
)


def _files(f: dict[str, int]) -> tuple[str, str, str, str]:
    if not f:
        return ("n/a",) * 4
    return (
        f"{_size(f['state'])} + {_size(f['cursors'])}",
        f"{_size(f['audit'])} ({f['audit_files']})",
        f"{_size(f['remote_write'])} ({f['remote_write_files']})",
        _size(f["charts"]),
    )


def aged_rows(r: Result) -> list[tuple[str, ...]]:
    """The fresh start and the aged one of a scale, side by side (the files at the end of the
    steady phase; the aged start's as written in a row of its own)."""
    if r.aged is None:
        return []
    a = r.aged
    who = f"{r.resources} ({r.accounts})"
    fresh = (
        who,
        "fresh",
        f"{_f(r.ready_s, 2)} ({_f(r.traffic_ready_s, 2)})",
        f"{_f(r.steady_healthz_ms, 0)} ({r.steady_slow_healthz})",
        _f(r.cpu_s_per_min, 2),
        f"{_f(r.rss_mb, 0)} ({_f(r.peak_rss_mb, 0)})",
        *_files(r.files),
    )
    written = (
        who,
        f"{a.hours:g} h, as written ({_f(a.write_s, 0)} s)",
        "",
        "",
        "",
        "",
        *_files(a.files_written),
    )
    aged = (
        who,
        f"{a.hours:g} h",
        f"{_f(a.ready_s, 2)} ({_f(a.traffic_ready_s, 2)})",
        f"{_f(a.stall_healthz_ms, 0)} ({a.slow_healthz})",
        _f(a.cpu_s_per_min, 2),
        f"{_f(a.rss_mb, 0)} ({_f(a.peak_rss_mb, 0)})",
        *_files(a.files),
    )
    return [fresh, written, aged]


def aged_text_table(results: Sequence[Result]) -> str:
    return aligned(AGED_HEADERS, [row for r in results for row in aged_rows(r)])


def aged_markdown_table(results: Sequence[Result]) -> str:
    return markdown(AGED_HEADERS, [row for r in results for row in aged_rows(r)])


def cost_text_tables(results: Sequence[Result]) -> str:
    """What each scale costs the platform and Prometheus, then the rule groups' evaluations
    (when a Prometheus ran)."""
    out = aligned(cost.HEADERS, cost.rows(results))
    rules = cost.all_rule_rows(results)
    return out + ("\n\n" + aligned(cost.RULE_HEADERS, rules) if rules else "")


def median_result(runs: Sequence[Result]) -> Result:
    """Field-wise median of repeated runs of one scale (counts and dicts from the last run)."""
    last = runs[-1]
    if len(runs) == 1:
        return last
    values: dict[str, Any] = {}
    for f in fields(Result):
        sample = getattr(last, f.name)
        if isinstance(sample, float) and f.name != "steady_seconds":
            values[f.name] = statistics.median(getattr(r, f.name) for r in runs)
        else:
            values[f.name] = sample
    return Result(**values)


def write_outputs(
    out: Path,
    results: Sequence[Result],
    conditions: dict[str, Any],
    notes: Sequence[str],
    sim: simulation.SimRate | None = None,
) -> list[Path]:
    """bench/out/results.md, results.json and cost.png (when matplotlib is there); ``sim``:
    the simulation's rate, a table of its own."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    md = out / "results.md"
    lines = ["# Benchmark results", "", markdown_table(results), ""]
    if any(r.aged is not None for r in results):
        lines += ["## Aged start", "", aged_markdown_table(results), ""]
    lines += ["## What it costs the platform and Prometheus", ""]
    lines += [markdown(cost.HEADERS, cost.rows(results)), ""]
    if rules := cost.all_rule_rows(results):
        lines += [markdown(cost.RULE_HEADERS, rules), ""]
    lines += ["## Targets", ""]
    lines += [targets.markdown_table(results), ""]
    if sim is not None:
        lines += ["## Simulation", "", simulation.markdown_table(sim), ""]
    lines += ["Conditions:", ""]
    lines += [f"- {k}: {v}" for k, v in conditions.items()]
    lines += ["", *(f"- {n}" for n in notes), ""]
    md.write_text("\n".join(lines), encoding="utf-8")
    written.append(md)
    js = out / "results.json"
    payload = {
        "conditions": conditions,
        "results": [r.to_json() for r in results],
        "simulation": sim.to_json() if sim is not None else None,
    }
    js.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    written.append(js)
    plot = out / "cost.png"
    if plot_costs(results, plot):
        written.append(plot)
    growth = out / "growth.png"
    if plot_growth(results, growth):
        written.append(growth)
    return written


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x: (a, b, r squared)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - my) ** 2 for y in ys)
    b = sxy / sxx if sxx else 0.0
    r2 = sxy * sxy / (sxx * syy) if sxx and syy else 1.0
    return my - b * mx, b, r2


def _pyplot() -> Any:
    try:  # optional: imported by name so type-checking does not need it installed
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None


def plot_growth(results: Sequence[Result], path: Path) -> bool:
    """Memory and refresh time against series on linear axes, each with its least-squares
    line and r squared: a straight line is linear growth. False without matplotlib or with
    fewer than three scales."""
    measured = [r for r in results if not math.isnan(r.rss_mb) and not math.isnan(r.refresh_s)]
    plt = _pyplot()
    if len(measured) < 3 or plt is None:
        return False
    xs = [r.series / 1e6 for r in measured]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (
        ("RSS MB (steady)", [r.rss_mb for r in measured], "MB"),
        ("full refresh s", [r.refresh_s for r in measured], "s"),
    )
    for ax, (title, ys, unit) in zip(axes, panels, strict=True):
        a, b, r2 = linear_fit(xs, ys)
        ax.plot(xs, ys, "o", label="measured")
        ends = [0.0, max(xs)]
        ax.plot(ends, [a + b * x for x in ends], "-", label=f"{a:.1f} + {b:.1f} {unit}/M series")
        ax.set_title(f"{title} (r² = {r2:.3f})")
        ax.set_xlabel("series (millions)")
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_costs(results: Sequence[Result], path: Path) -> bool:
    """Cost against resources, log-log; False (and no file) without matplotlib or data."""
    plt = _pyplot()
    if len(results) < 2 or plt is None:
        return False
    xs = [r.resources for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.plot(xs, [r.exporter_p50_ms for r in results], "o-", label="exporter /metrics p50")
    left.plot(xs, [r.static_p50_ms for r in results], "x:", label="same body, static bytes p50")
    left.plot(xs, [r.baseline_p50_ms for r in results], "s--", label="prometheus-client p50")
    left.plot(xs, [r.refresh_s * 1e3 for r in results], "^-", label="full refresh")
    left.plot(xs, [r.stall_probe_ms for r in results], "v:", label="worst loop stall")
    left.set_ylabel("milliseconds")
    left.set_title("latency")
    right.plot(xs, [r.cpu_percent for r in results], "o-", label="CPU % of a core (steady)")
    right.plot(xs, [r.rss_mb for r in results], "s-", label="RSS MB")
    right.plot(xs, [r.series / 1000 for r in results], "^--", label="series (thousands)")
    right.set_title("steady-state cost")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("CDN resources (restream = /5, DVR = /10)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
