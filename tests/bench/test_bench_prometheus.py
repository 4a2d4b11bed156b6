"""What the exporter costs the user's Prometheus: a real Prometheus over the benchmark's steady
phase (``bench.prom``) evaluates every rule group of deploy/prometheus/rules.yml over the
exporter's series, and the cost tables show each group (no timing asserted).

Needs ``prometheus`` (Debian package ``prometheus``): skipped with a reason when missing, a
failure under ``CDNVIDEO_REQUIRE_TOOLS=1`` (CI)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import aiohttp
import pytest
import yaml

from bench import cost, procs, prom
from bench.__main__ import with_prometheus
from bench.scale import (
    Plan,
    Result,
    upstream_counts,
    watched_steady,
    why_no_prometheus,
    write_config,
)
from tests.deploy.deploy_helpers import tool


def test_every_group_is_evaluated_at_the_bench_interval_and_keeps_its_own_in_the_table() -> None:
    doc, own = prom.rules_at(prom.RULES, 1.0)
    shipped = yaml.safe_load(prom.RULES.read_text(encoding="utf-8"))
    assert [g["name"] for g in doc["groups"]] == [g["name"] for g in shipped["groups"]]
    assert {g["interval"] for g in doc["groups"]} == {"1000ms"}
    assert own == {g["name"]: str(g.get("interval", "")) for g in shipped["groups"]}
    assert "5m" in own.values()  # the month-to-date group: once in 5 minutes in service


def test_prometheus_times_read_to_the_microsecond() -> None:
    assert prom.epoch("1970-01-01T00:00:01.123456789Z") == pytest.approx(1.123456)
    assert prom.epoch("1970-01-01T00:00:02Z") == 2.0
    assert prom.epoch("1970-01-01T01:00:00.5+01:00") == 0.5


@pytest.mark.system
@pytest.mark.realtime  # mostly waits on the processes it starts: run beside the rest
async def test_a_real_prometheus_evaluates_every_rule_group_over_the_steady_phase(
    tmp_path: Path,
) -> None:
    binary = tool("prometheus", "the Debian package prometheus")
    plan = Plan(steady_seconds=1.0, prometheus=binary, prometheus_interval=0.5)
    result = Result(4, 1, 1)
    sim = await procs.start("bench.sim_proc", "--resources", "4", "--restreams", "1", "--dvr", "1")
    try:
        config, _ = write_config(sim, tmp_path, "")
        async with aiohttp.ClientSession(auto_decompress=False) as s:
            # listening, its first polls under way: not waiting for /readyz saves seconds
            started = time.time()
            exporter = await procs.start("bench.exporter_proc", "--config", str(config))
            try:
                await watched_steady(s, result, exporter, sim, plan, tmp_path)
                since_start = await upstream_counts(s, sim.ready["base_url"], started, time.time())
            finally:
                await exporter.stop()
    finally:
        await sim.stop()
    result.upstream_estimate = cost.estimate(json.loads(config.read_text()), 1)

    p = result.prometheus
    assert p is not None, result.prometheus_note
    assert p.version
    shipped = yaml.safe_load(prom.RULES.read_text(encoding="utf-8"))["groups"]
    assert [(g.name, g.rules) for g in p.groups] == [(g["name"], len(g["rules"])) for g in shipped]
    for g in p.groups:  # evaluated over the exporter's series: after its first scrape was in
        assert g.evaluations >= prom.MIN_EVALUATIONS, g
        assert 0 < g.median_ms <= g.max_ms
        assert math.isfinite(g.last_ms)
    assert p.round_ms == pytest.approx(sum(g.median_ms for g in p.groups))
    assert p.scrapes >= 1
    assert p.scrape_error == ""
    assert p.samples_scraped > 0
    assert p.head_series >= p.samples_scraped  # and up, scrape_*, the rules' series
    assert 0 < p.rss_mb <= p.peak_rss_mb
    # the first polls run as the exporter starts, before the phase: counted in the simulator's
    # log from the start, the phase's counts are a part of them
    assert since_start["traffic"] > 0
    assert all(n <= since_start[area] for area, n in result.upstream_by_area.items())

    rows = cost.rule_rows(result)
    assert [r[1] for r in rows] == [*(g["name"] for g in shipped), "every group"]
    assert all(r[5] != "n/a" for r in rows)
    assert "n/a" not in cost.row(result)[-4:]


def test_without_prometheus_the_plan_says_why() -> None:
    assert with_prometheus(Plan(), False, "/usr/bin/prometheus").prometheus == "/usr/bin/prometheus"
    refused = with_prometheus(Plan(), True, "/usr/bin/prometheus")
    assert (refused.prometheus, refused.no_prometheus) == ("", "not run: --no-prometheus")
    missing = with_prometheus(Plan(), False, None)
    assert missing.prometheus == ""
    assert "prometheus not found on PATH" in missing.no_prometheus
    assert why_no_prometheus(missing, 10) == missing.no_prometheus


def test_no_prometheus_above_its_scale_limit() -> None:
    plan = Plan(prometheus="/usr/bin/prometheus", prometheus_max_resources=5000)
    assert why_no_prometheus(plan, 5000) == ""
    assert why_no_prometheus(plan, 25000) == (
        "not run above 5000 resources (--prometheus-max-resources)"
    )


def test_the_estimate_adds_the_history_share_of_every_restream_resource() -> None:
    raw = {"upstream": {"base_url": "http://127.0.0.1:1", "token": "t0ken-not-shown"},
           "accounts": [{"name": "a", "dvr_streams": ["s1", "s2"]}, {"name": "b"}]}  # fmt: skip
    by_area = cost.estimate(raw, 120)
    assert by_area["traffic"] == pytest.approx(2 * 2.4)
    assert by_area["restream"] == pytest.approx(2 * 4 + 120 / 60)  # each once in 12 polls of 5 min
    assert by_area["dvr"] == 2.0
