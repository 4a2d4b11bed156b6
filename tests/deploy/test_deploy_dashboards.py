"""Grafana dashboards: every query is valid PromQL over documented series; the JSON is coherent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_helpers import (
    CONTRACTS,
    FAMILIES,
    alert_rules,
    dashboard_queries,
    dashboard_targets,
    dashboards,
    panels,
    promql_problems,
    run,
    tool,
    variable_queries,
    variables_used,
)

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRAFANA_VARIABLES = {"__range", "__rate_interval", "__interval"}

# What issue 7 asks each board to show, by dashboard file: words that must appear in a title.
BOARDS = {
    "traffic-overview.json": ("bandwidth", "requests", "status class", "hit ratio", "by size"),
    "per-resource.json": ("bandwidth", "requests", "status class", "5xx ratio", "hit ratio"),
    "restream.json": ("target status", "status changes"),
    "dvr.json": ("alive", "recording lag", "recorded"),
    "exporter-health.json": (
        "poll status",
        "lag",
        "upstream requests",
        "latency",
        "windows",
        "refused requests",  # issue 51: the exporter's own HTTP server
    ),
    # issue 38: month-to-date volume per account and top resources, the 95th percentile, daily
    "billing.json": ("month-to-date volume", "top resources", "95th percentile", "daily volume"),
}


def test_every_board_of_issue_7_exists_and_shows_its_panels() -> None:
    boards = dashboards()
    for name, words in BOARDS.items():
        assert name in boards, name
        titles = " | ".join(p.get("title", "").lower() for p in panels(boards[name]))
        for word in words:
            assert word in titles, f"{name}: no panel about {word!r} ({titles})"


def test_every_query_is_valid_promql(tmp_path: Path) -> None:
    """promtool parses each query as the expression of a recording rule."""
    promtool = tool("promtool", "the Debian package prometheus")
    queries = list(dashboard_queries()) + list(variable_queries())
    rules = [{"record": f"dashboard:query_{i}", "expr": q} for i, (_, q) in enumerate(queries)]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = run([promtool, "check", "rules", str(path)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_the_promql_check_rejects_a_broken_query(tmp_path: Path) -> None:
    promtool = tool("promtool", "the Debian package prometheus")
    path = tmp_path / "broken.yml"
    rule = {"record": "x:y", "expr": "sum by (account (cdnvideo_up)"}
    path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [rule]}]}))
    assert run([promtool, "check", "rules", str(path)]).returncode != 0


@pytest.mark.parametrize(("ref", "query"), list(dashboard_queries()), ids=lambda v: str(v)[:60])
def test_query_uses_documented_series_and_labels(ref: str, query: str) -> None:
    assert promql_problems(query) == [], ref


@pytest.mark.parametrize(("ref", "query"), list(variable_queries()), ids=lambda v: str(v)[:60])
def test_variable_query_uses_documented_series_and_labels(ref: str, query: str) -> None:
    assert promql_problems(query) == [], ref


def test_the_name_check_catches_typos() -> None:
    assert promql_problems("cdnvideo_account_bandwith_bytes_per_second") != []
    assert promql_problems('cdnvideo_up{aera="dvr"}') != []
    assert promql_problems('cdnvideo_account_requests_per_second{side="egde"}') != []
    assert promql_problems("max by (acount) (cdnvideo_up)") != []
    assert promql_problems('max by (account) (cdnvideo_up{area="dvr"})') == []


def test_families_agree_with_the_contract() -> None:
    """Every family the tests know is in docs/dev/contracts.md, with the labels it spells out."""
    import re

    text = CONTRACTS.read_text(encoding="utf-8")
    documented: dict[str, tuple[str, ...] | None] = {}
    for m in re.finditer(r"`?(cdnvideo_[a-z0-9_]*[a-z0-9])(?:\{([a-z_,]+)\})?", text):
        name, labels = m.group(1), m.group(2)
        if documented.get(name) is None:
            documented[name] = tuple(labels.split(",")) if labels else None
    # "Per resource: the same suffixes with prefix cdnvideo_resource_" and the resource labels.
    for name in [n for n in documented if n.startswith("cdnvideo_account_")]:
        documented.setdefault(name.replace("_account_", "_resource_", 1), None)
    unknown = set(FAMILIES) - set(documented)
    assert not unknown, f"not in the contract: {sorted(unknown)}"
    for name, labels in documented.items():
        if labels is not None and name in FAMILIES:
            assert FAMILIES[name] == labels, name


def test_rules_and_dashboards_cover_the_main_families() -> None:
    text = " ".join(q for _, q in dashboard_queries()) + " ".join(r["expr"] for r in alert_rules())
    unused = [name for name in FAMILIES if name not in text]
    assert unused == [], f"families no dashboard or alert shows: {unused}"


@pytest.mark.parametrize("name", sorted(dashboards()))
def test_dashboard_structure(name: str) -> None:
    board = dashboards()[name]
    assert board["uid"].startswith("cdnvideo-")
    assert board["title"].startswith("CDNvideo / ")
    assert "cdnvideo" in board["tags"]
    defined = {v["name"] for v in board["templating"]["list"]}
    assert "datasource" in defined
    assert "account" in defined
    ds_var = next(v for v in board["templating"]["list"] if v["name"] == "datasource")
    assert ds_var["type"] == "datasource"
    assert ds_var["query"] == "prometheus"

    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(board):
        if panel["type"] == "row":
            continue
        assert panel.get("title"), panel["id"]
        assert panel["datasource"] == DATASOURCE, panel["title"]
        targets = panel["targets"]
        assert targets, panel["title"]
        assert len({t["refId"] for t in targets}) == len(targets), panel["title"]
        for target in targets:
            assert target["datasource"] == DATASOURCE, panel["title"]
            used = variables_used(target["expr"])
            assert used <= defined | GRAFANA_VARIABLES, f"{panel['title']}: {used - defined}"
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            assert var["datasource"] == DATASOURCE
            used = variables_used(var["definition"])
            assert used <= defined, var["name"]


@pytest.mark.parametrize("name", sorted(dashboards()))
def test_panels_do_not_overlap_and_fit_the_grid(name: str) -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in dashboards()[name]["panels"]:
        pos: dict[str, Any] = panel["gridPos"]
        assert pos["x"] >= 0, panel["title"]
        assert pos["w"] > 0, panel["title"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def test_dashboard_uids_are_unique() -> None:
    uids = [board["uid"] for board in dashboards().values()]
    assert len(uids) == len(set(uids))


def test_every_target_has_a_query() -> None:
    count = 0
    for name, panel, target in dashboard_targets():
        assert target["expr"].strip(), f"{name}: {panel['title']}"
        count += 1
    assert count >= 40


def test_late_hit_bytes_are_on_their_own_right_axis_in_bytes() -> None:
    (panel,) = [
        p
        for p in panels(dashboards()["exporter-health.json"])
        if p.get("title") == "Late requests added per minute"
    ]
    bytes_query = next(t for t in panel["targets"] if "hit_bytes" in t["expr"])
    (override,) = panel["fieldConfig"]["overrides"]
    assert override["matcher"] == {"id": "byFrameRefID", "options": bytes_query["refId"]}
    props = {p["id"]: p["value"] for p in override["properties"]}
    assert props["custom.axisPlacement"] == "right"
    assert props["unit"] == "bytes"
    assert panel["fieldConfig"]["defaults"]["unit"] == "short"  # requests stay on the left


def test_a_panel_that_explains_its_emptiness_says_it_in_its_description_too() -> None:
    """``noValue`` is what Grafana shows instead of "No data"; the same words are in the
    description, so the panel's (i) says when it fills even while it has data."""
    explained = [
        p
        for board in dashboards().values()
        for p in panels(board)
        if p.get("fieldConfig", {}).get("defaults", {}).get("noValue")
    ]
    assert len(explained) >= 5
    for p in explained:
        assert p["fieldConfig"]["defaults"]["noValue"] in p["description"], p["title"]


def test_the_job_and_instance_variables_at_all_match_the_exporters_targets_only() -> None:
    """Without a custom allValue, Grafana's "All" is the regular expression of the variable's
    values (from cdnvideo_exporter_build_info), so `up` and `scrape_*` panels never count
    another job's targets (tests/system/test_system_dashboard_scope.py proves it against a
    Prometheus that scrapes itself)."""
    for name, board in dashboards().items():
        for var in board["templating"]["list"]:
            if var["name"] in ("job", "instance"):
                assert "allValue" not in var, f"{name}: ${var['name']}"
                assert "cdnvideo_exporter_build_info" in var["definition"], name
