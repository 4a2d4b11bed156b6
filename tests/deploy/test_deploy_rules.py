"""Alert rules: promtool-clean, unit-tested both ways, documented, and in sync with k8s."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_helpers import (
    K8S,
    REPO,
    RULES,
    RULES_TEST,
    alert_rules,
    load_yaml,
    module,
    promql_problems,
    recording_rules,
    run,
    tool,
)

# The alerts issue 7 asks for, by the condition each one covers.
REQUIRED_ALERTS = {
    "CdnvideoRestreamTargetFailing",  # target not OK 2 min while active and scheduled
    "CdnvideoDvrNodeNotAlive",
    "CdnvideoDvrRecordingStalled",  # last recording end falling behind
    "CdnvideoTalkingHeadQuotaLow",  # below 10 %
    "CdnvideoTrafficDataStale",  # lag above delay + 5 minutes
    "CdnvideoExporterAreaDown",  # cdnvideo_up == 0 for 5 minutes
    "CdnvideoUpstreamErrorRatioHigh",
    "CdnvideoResource5xxRatioHigh",
}


def test_promtool_check_rules() -> None:
    promtool = tool("promtool", "the Debian package prometheus")
    result = run([promtool, "check", "rules", str(RULES)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules()) + len(recording_rules())} rules found" in result.stdout


def test_recording_rules_read_documented_series_and_are_documented() -> None:
    doc = (REPO / "docs" / "billing.md").read_text(encoding="utf-8")
    assert len(recording_rules()) == 4
    for rule in recording_rules():
        assert promql_problems(rule["expr"]) == [], rule["record"]
        assert f"`{rule['record']}`" in doc, rule["record"]
        # level:metric:operations, and one series per account whichever replica scraped it
        name = r"account(_resource)?_side:cdnvideo_[a-z_]+:rate5m[a-z0-9_]*"
        assert re.fullmatch(name, rule["record"]), rule["record"]
        assert "max by (account" in rule["expr"]


# Evaluated by promtool every 5 minutes of each unit test (a 31-day subquery at 1-minute
# steps: most of the suite's CPU), read by no alert; proved against a real Prometheus by
# tests/system/test_system_billing_rules.py.
MONTH_GROUP = "cdnvideo-billing-month"


def test_promtool_unit_tests_pass(tmp_path: Path) -> None:
    """rules.test.yml against rules.yml less the month-to-date group, which no alert and no
    other rule reads (checked here), so leaving it out changes no outcome the tests check."""
    promtool = tool("promtool", "the Debian package prometheus")
    rules = load_yaml(RULES)
    month = [g for g in rules["groups"] if g["name"] == MONTH_GROUP]
    assert len(month) == 1
    records = {r["record"] for r in month[0]["rules"]}
    rest = [g for g in rules["groups"] if g["name"] != MONTH_GROUP]
    for group in rest:
        for rule in group["rules"]:
            assert not any(name in rule["expr"] for name in records), rule
    (tmp_path / RULES.name).write_text(yaml.safe_dump({"groups": rest}), encoding="utf-8")
    (tmp_path / RULES_TEST.name).write_text(RULES_TEST.read_text(encoding="utf-8"), "utf-8")
    result = run([promtool, "test", "rules", RULES_TEST.name], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_unit_tests_would_catch_a_changed_threshold(tmp_path: Path) -> None:
    """Guard against unit tests that pass whatever the rules say."""
    promtool = tool("promtool", "the Debian package prometheus")
    mutated = RULES.read_text(encoding="utf-8").replace(") > 0.05", ") > 0.5")
    assert mutated != RULES.read_text(encoding="utf-8")
    (tmp_path / "rules.yml").write_text(mutated, encoding="utf-8")
    # the unit tests of that alert (the month-long billing ones take minutes and test no alert)
    suite = load_yaml(RULES_TEST)
    alert = "CdnvideoResource5xxRatioHigh"
    suite["tests"] = [
        t
        for t in suite["tests"]
        if any(c["alertname"] == alert for c in t.get("alert_rule_test", []))
    ]
    assert suite["tests"], f"no unit test of {alert}"
    (tmp_path / "rules.test.yml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    result = run([promtool, "test", "rules", "rules.test.yml"], tmp_path)
    assert result.returncode != 0
    assert alert in result.stdout + result.stderr


def test_every_required_alert_exists() -> None:
    assert {r["alert"] for r in alert_rules()} >= REQUIRED_ALERTS


def test_every_alert_is_unit_tested_firing_and_not_firing() -> None:
    alerts = {r["alert"] for r in alert_rules()}
    cases: dict[str, set[str]] = defaultdict(set)
    for test in load_yaml(RULES_TEST)["tests"]:
        for case in test.get("alert_rule_test", []):
            cases[case["alertname"]].add("fires" if case.get("exp_alerts") else "silent")
    assert set(cases) <= alerts, f"tests for unknown alerts: {set(cases) - alerts}"
    for alert in sorted(alerts):
        assert cases[alert] == {"fires", "silent"}, f"{alert}: only {sorted(cases[alert])}"


RUNBOOK_BASE = "https://github.com/cdnvideo/cdnvideo-exporter/blob/main/docs/alerts.md"


def alert_sections() -> dict[str, str]:
    """docs/alerts.md's ``## `` sections by their anchor (the heading in lower case, as GitHub
    makes it for a one-word heading)."""
    text = (REPO / "docs" / "alerts.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (\S+)$", text, flags=re.M)
    return {name.lower(): body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alert_carries_severity_and_runbook(rule: dict[str, object]) -> None:
    labels = rule["labels"]
    annotations = rule["annotations"]
    assert isinstance(labels, dict)
    assert isinstance(annotations, dict)
    assert labels["severity"] in {"critical", "warning"}
    assert {"summary", "description", "runbook_url"} <= set(annotations)
    assert "runbook" not in annotations  # the text lives in docs/alerts.md, once
    base, _, anchor = str(annotations["runbook_url"]).partition("#")
    assert base == RUNBOOK_BASE
    sections = alert_sections()
    assert anchor in sections, f"docs/alerts.md has no section #{anchor}"
    runbook = sections[anchor].partition("**Runbook.**")[2]
    assert len(runbook.split()) >= 30, "runbook text too thin to act on"
    assert re.fullmatch(r"Cdnvideo[A-Z][A-Za-z0-9]+", str(rule["alert"]))


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alert_expression_uses_documented_series_and_labels(rule: dict[str, str]) -> None:
    assert promql_problems(rule["expr"]) == []


def test_restream_alert_carries_status_code_and_description() -> None:
    rule = next(r for r in alert_rules() if r["alert"] == "CdnvideoRestreamTargetFailing")
    text = rule["annotations"]["summary"] + rule["annotations"]["description"]
    assert "cdnvideo_restream_status_info" in text
    assert ".Labels.code" in text
    assert ".Labels.description" in text


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alert_is_documented(rule: dict[str, str]) -> None:
    doc = (REPO / "docs" / "alerts.md").read_text(encoding="utf-8")
    assert re.search(rf"^## `?{rule['alert']}`?\s*$", doc, re.MULTILINE), rule["alert"]


def test_prometheusrule_carries_the_same_groups_as_rules_yml() -> None:
    source = load_yaml(RULES)
    rule = load_yaml(K8S / "prometheusrule.yaml")
    assert rule["kind"] == "PrometheusRule"
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"]["groups"] == source["groups"]


def test_prometheusrule_is_what_sync_rules_writes() -> None:
    result = subprocess.run(
        [sys.executable, str(K8S / "sync_rules.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def _duration(text: str) -> timedelta:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(
        (timedelta(seconds=int(n) * units[u]) for n, u in re.findall(r"(\d+)([smhd])", text)),
        timedelta(),
    )


def test_no_rule_takes_a_long_fine_subquery_more_often_than_every_5_minutes() -> None:
    """A subquery longer than a day at under 5-minute steps costs thousands of inner
    evaluations: its group evaluates at most every 5 minutes (its own ``interval``; the
    global evaluation interval is typically 15 s to 1 m)."""
    pp = module("promql_parser", "the dev extras (pip install -e '.[dev]')")
    costly: list[str] = []
    for group in load_yaml(RULES)["groups"]:
        interval = _duration(group.get("interval", "0s"))
        for rule in group["rules"]:
            found: list[Any] = []
            pp.walk(
                pp.parse(rule["expr"]),
                lambda n: found.append(n) if isinstance(n, pp.SubqueryExpr) else None,  # noqa: B023
            )
            for sub in found:
                step = sub.step or timedelta(0)  # no step: the evaluation interval's
                fine = sub.range > timedelta(days=1) and step < timedelta(minutes=5)
                if fine and interval < timedelta(minutes=5):
                    costly.append(f"{group['name']}: {rule.get('record') or rule['alert']}")
    assert costly == []
    month = next(g for g in load_yaml(RULES)["groups"] if g["name"] == "cdnvideo-billing-month")
    assert month["interval"] == "5m"
