"""Shared helpers of the deployment-artefact tests: tools, artefact readers, PromQL analysis.

The system test (real Prometheus against the running exporter) reuses these readers, so every
dashboard query and alert expression is taken from one place:

    for ref, expr in dashboard_queries(): ...   # ref = "file.json: panel title [A]"
    for rule in alert_rules(): rule["expr"]
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DASHBOARDS = REPO / "dashboards"
COMPOSE_DIR = DEPLOY / "compose"
RULES = DEPLOY / "prometheus" / "rules.yml"
RULES_TEST = DEPLOY / "prometheus" / "rules.test.yml"
K8S = DEPLOY / "k8s"
CONTRACTS = REPO / "docs" / "dev" / "contracts.md"

REQUIRE_TOOLS = os.environ.get("CDNVIDEO_REQUIRE_TOOLS") == "1"


def missing(reason: str) -> NoReturn:
    """Skip for a missing tool, or fail when CI requires every tool (CDNVIDEO_REQUIRE_TOOLS=1)."""
    if REQUIRE_TOOLS:
        pytest.fail(f"{reason} (CDNVIDEO_REQUIRE_TOOLS=1: nothing may be skipped)")
    pytest.skip(reason)


def tool(name: str, hint: str) -> str:
    """Path of a command-line tool: the venv's bin first (pip-installed tools), then PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if found is None:
        missing(f"{name} not found; install {hint}")
    return found


def module(name: str, hint: str) -> Any:
    """Import an optional Python module, skipping (or failing in CI) when it is absent."""
    try:
        return __import__(name)
    except ImportError:
        missing(f"Python module {name} not installed; install {hint}")


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # A bound against a hung tool, not a speed target: `promtool test rules` evaluates the
    # month-long billing subqueries and takes minutes of CPU on a 2-core machine under load.
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# ---- artefacts ---------------------------------------------------------------------------


def compose() -> dict[str, Any]:
    data = load_yaml(COMPOSE_DIR / "compose.yaml")
    assert isinstance(data, dict)
    return data


def dashboards() -> dict[str, dict[str, Any]]:
    """Every dashboard JSON by file name."""
    return {
        p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(DASHBOARDS.glob("*.json"))
    }


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, also those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def dashboard_targets() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(file name, panel, target) for every query target of every dashboard."""
    for name, dashboard in dashboards().items():
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                yield name, panel, target


# Values for Grafana's variables that turn a panel query into plain PromQL: every
# user variable matches everything; the interval variables get typical durations.
GRAFANA_BUILTINS = {"__range": "1h", "__rate_interval": "1m", "__interval": "1m"}
_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))")


def concrete(expr: str, values: dict[str, str] | None = None) -> str:
    """The query with Grafana variables replaced (user variables default to ``.*``)."""
    table = {**GRAFANA_BUILTINS, **(values or {})}
    return _VARIABLE.sub(lambda m: table.get(m.group(1) or m.group(2), ".*"), expr)


def variables_used(expr: str) -> set[str]:
    return {m.group(1) or m.group(2) for m in _VARIABLE.finditer(expr)}


def dashboard_queries(values: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """(reference, concrete PromQL) for every panel query of every dashboard."""
    for name, panel, target in dashboard_targets():
        ref = f"{name}: {panel['title']} [{target['refId']}]"
        yield ref, concrete(target["expr"], values)


_LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.+),\s*)?(?P<label>\w+)\)$")


def variable_queries(values: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """(reference, PromQL) for every ``label_values(selector, label)`` template variable."""
    for name, dashboard in dashboards().items():
        for var in dashboard["templating"]["list"]:
            if var.get("type") != "query":
                continue
            m = _LABEL_VALUES.match(var["definition"])
            assert m, f"{name}: ${var['name']}: {var['definition']!r} is not label_values(...)"
            assert m.group("selector"), f"{name}: ${var['name']} must name a series"
            selector = concrete(m.group("selector"), values)
            yield f"{name}: ${var['name']}", f"count by ({m.group('label')}) ({selector})"


def alert_rules() -> list[dict[str, Any]]:
    return [r for group in load_yaml(RULES)["groups"] for r in group["rules"] if "alert" in r]


def recording_rules() -> list[dict[str, Any]]:
    return [r for group in load_yaml(RULES)["groups"] for r in group["rules"] if "record" in r]


def recorded_labels() -> dict[str, set[str]]:
    """Each recorded series and its labels: those its expression aggregates ``by``."""
    out: dict[str, set[str]] = {}
    for rule in recording_rules():
        found = re.search(r"\bby \(([a-z_, ]+)\)", rule["expr"])
        assert found, f"{rule['record']}: aggregates by no labels"
        out[rule["record"]] = {label.strip() for label in found.group(1).split(",")}
    return out


# ---- metric families ---------------------------------------------------------------------

_ACCOUNT_SUFFIXES = {
    "bandwidth_bytes_per_second": ("side",),
    "requests_total": ("side",),
    "requests_per_second": ("side",),
    "responses_total": ("side", "code"),
    "responses_per_second": ("side", "code"),
    "responses_by_class_total": ("side", "class"),
    "responses_by_class_per_second": ("side", "class"),
    "response_time_median_seconds": ("side", "size_range"),
    "edge_hit_ratio": (),
    "edge_hit_bytes_total": (),
    "edge_hit_bytes_per_second": (),
    "window_end_timestamp_seconds": (),
    "transferred_bytes_total": ("side",),
}
_TARGET = ("account", "resource_id", "source", "target", "target_key")
_DVR = ("account", "stream", "host")

# Every family the exporter exposes, with its labels (docs/dev/contracts.md; a test checks
# that this table and the contract list the same names and, where the contract spells
# them out, the same labels).
FAMILIES: dict[str, tuple[str, ...]] = {
    **{f"cdnvideo_account_{s}": ("account", *extra) for s, extra in _ACCOUNT_SUFFIXES.items()},
    **{
        f"cdnvideo_resource_{s}": (
            ("account", "resource", *extra)
            if s.endswith("_total")
            else ("account", "resource", "resource_name", "cname", *extra)
        )
        for s, extra in _ACCOUNT_SUFFIXES.items()
    },
    "cdnvideo_resource_info": ("account", "resource", "resource_name", "cname"),
    "cdnvideo_restream_resource_info": ("account", "resource_id", "name", "type"),
    "cdnvideo_restream_resource_active": ("account", "resource_id"),
    "cdnvideo_restream_status_code": _TARGET,
    "cdnvideo_restream_up": _TARGET,
    "cdnvideo_restream_scheduled": _TARGET,
    "cdnvideo_restream_status_changed_timestamp_seconds": _TARGET,
    "cdnvideo_restream_status_info": (*_TARGET, "code", "description"),
    "cdnvideo_dvr_alive": _DVR,
    "cdnvideo_dvr_enabled": _DVR,
    "cdnvideo_dvr_window": _DVR,
    "cdnvideo_dvr_recorded_seconds": _DVR,
    "cdnvideo_dvr_ranges": _DVR,
    "cdnvideo_dvr_first_recording_timestamp_seconds": _DVR,
    "cdnvideo_dvr_last_recording_end_timestamp_seconds": _DVR,
    "cdnvideo_talking_head_quota_limit": ("account",),
    "cdnvideo_talking_head_quota_left": ("account",),
    "cdnvideo_talking_head_watermark": ("account",),
    "cdnvideo_talking_head_voices": ("account",),
    "cdnvideo_talking_head_models": ("account",),
    "cdnvideo_talking_head_tasks": ("account", "status"),
    "cdnvideo_up": ("account", "area"),
    "cdnvideo_last_success_timestamp_seconds": ("account", "area"),
    "cdnvideo_next_poll_timestamp_seconds": ("account", "area"),
    "cdnvideo_poll_duration_seconds": ("area",),
    "cdnvideo_upstream_requests_total": ("area", "code"),
    "cdnvideo_upstream_request_duration_seconds": ("area",),
    "cdnvideo_upstream_rate_limited_total": ("area",),
    "cdnvideo_upstream_polls_postponed_total": ("area",),
    "cdnvideo_upstream_budget_requests_per_minute": ("account",),
    "cdnvideo_upstream_budget_limit_per_minute": ("account",),
    "cdnvideo_traffic_windows_total": ("account", "outcome"),
    "cdnvideo_traffic_lag_seconds": ("account",),
    "cdnvideo_traffic_windows_owed": ("account",),
    "cdnvideo_traffic_settle_overdue_seconds": ("account",),
    "cdnvideo_series_dropped_total": (),
    "cdnvideo_state_save_failures_total": (),
    "cdnvideo_state_entries_rejected_total": (),
    "cdnvideo_state_last_save_timestamp_seconds": (),
    "cdnvideo_upstream_clock_skew_seconds": (),
    "cdnvideo_upstream_clock_readings_rejected_total": (),
    "cdnvideo_upstream_values_rejected_total": ("area", "field"),
    "cdnvideo_exporter_build_info": ("version", "revision", "branch", "pythonversion"),
    "cdnvideo_exporter_config_last_reload_successful": (),
    "cdnvideo_exporter_config_last_reload_success_timestamp_seconds": (),
    "cdnvideo_exporter_web_config_last_reload_successful": (),
    "cdnvideo_exporter_http_requests_total": ("handler", "code"),
    "cdnvideo_exporter_http_request_duration_seconds": ("handler",),
    "cdnvideo_traffic_late_requests_total": ("account", "after_minutes"),
    "cdnvideo_traffic_late_hit_bytes_total": ("account", "after_minutes"),
    "cdnvideo_traffic_late_share": ("account", "after_minutes"),
    "cdnvideo_traffic_settled_late_share": ("account",),
    "cdnvideo_traffic_last_stage_late_share": ("account",),
    "cdnvideo_traffic_audit_seconds_total": ("account", "result"),
    "cdnvideo_traffic_audit_difference": ("account", "family"),
    "cdnvideo_traffic_audit_last_timestamp_seconds": ("account",),
    "cdnvideo_remote_write_samples_total": ("outcome",),
    "cdnvideo_remote_write_pending_minutes": ("account",),
    "cdnvideo_remote_write_oldest_pending_minute_age_seconds": ("account",),
    "cdnvideo_remote_write_last_minute_timestamp_seconds": ("account",),
}
HISTOGRAMS = {
    "cdnvideo_poll_duration_seconds",
    "cdnvideo_upstream_request_duration_seconds",
    "cdnvideo_exporter_http_request_duration_seconds",
}
# Written by remote_write, never scraped: no target labels (docs/remote-write.md).
REMOTE_WRITTEN: dict[str, tuple[str, ...]] = {
    "cdnvideo_minute_account_requests": ("account", "side"),
    "cdnvideo_minute_account_transferred_bytes": ("account", "side"),
    "cdnvideo_minute_account_responses": ("account", "side", "code"),
    "cdnvideo_minute_resource_requests": ("account", "resource", "side"),
    "cdnvideo_minute_resource_transferred_bytes": ("account", "resource", "side"),
}
# What prometheus-client's process and platform collectors add to /metrics (Linux), beside the
# exporter's own families (docs/metrics.md): not charted, but always there.
CLIENT_SERIES: dict[str, tuple[str, ...]] = {
    "process_virtual_memory_bytes": (),
    "process_resident_memory_bytes": (),
    "process_start_time_seconds": (),
    "process_cpu_seconds_total": (),
    "process_open_fds": (),
    "process_max_fds": (),
    "python_info": ("implementation", "major", "minor", "patchlevel", "version"),
}
# Series Prometheus itself writes for every scrape target.
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
# Labels a scrape adds to every series (static config, or the Prometheus Operator).
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}
# Label values fixed by the contract; a typo in a matcher would silently match nothing.
ENUMS = {
    "side": {"edge", "origin"},
    "area": {"traffic", "restream", "dvr", "talking_head", "auth"},
    "outcome": {"read", "backfilled", "revised", "missed", "mismatched", "given_up", "released"}
    | {"sent", "rejected", "too_old", "retried"},  # cdnvideo_remote_write_samples_total
    "result": {"equal", "differs"},
}


def series_labels(name: str) -> set[str] | None:
    """Labels a selector of this series name may use, or None for an unknown name."""
    if name in PROMETHEUS_SERIES:
        return set(TARGET_LABELS)
    for family in HISTOGRAMS:
        if name in (f"{family}_bucket", f"{family}_sum", f"{family}_count"):
            extra = {"le"} if name.endswith("_bucket") else set()
            return set(FAMILIES[family]) | TARGET_LABELS | extra
    if name in FAMILIES and name not in HISTOGRAMS:
        return set(FAMILIES[name]) | TARGET_LABELS
    recorded = recorded_labels().get(name)
    if recorded is not None:
        return recorded
    if name in REMOTE_WRITTEN:
        return set(REMOTE_WRITTEN[name])
    return None


def promql_problems(expr: str) -> list[str]:
    """Names, labels and label values in a PromQL expression that the contract does not know."""
    pp = module("promql_parser", "the dev extras (pip install -e '.[dev]')")
    try:
        ast = pp.parse(expr)
    except Exception as exc:  # the parser raises its own error types
        return [f"does not parse: {exc}"]
    problems: list[str] = []
    selectors: list[Any] = []
    groupings: list[list[str]] = []

    def visit(node: Any) -> None:
        if isinstance(node, pp.VectorSelector):
            selectors.append(node)
        elif isinstance(node, pp.AggregateExpr) and node.modifier is not None:
            groupings.append(list(node.modifier.labels))
        elif isinstance(node, pp.BinaryExpr) and node.modifier is not None:
            matching = node.modifier.matching
            if matching is not None:
                groupings.append(list(matching.labels))

    pp.walk(ast, visit)
    known: set[str] = set()
    for sel in selectors:
        labels = series_labels(sel.name or "")
        if labels is None:
            problems.append(f"unknown series {sel.name!r}")
            continue
        known |= labels
        for matcher in sel.matchers.matchers:
            if matcher.name not in labels:
                problems.append(f"{sel.name} has no label {matcher.name!r}")
            enum = ENUMS.get(matcher.name)
            if enum and str(matcher.op).endswith(".Equal") and matcher.value not in enum:
                problems.append(
                    f"{sel.name}{{{matcher.name}={matcher.value!r}}} is not one of {sorted(enum)}"
                )
    if not selectors:
        problems.append("selects no series")
    for labels in groupings:
        for label in labels:
            if label not in known:
                problems.append(f"groups by {label!r}, which none of its series has")
    return problems


@functools.lru_cache(maxsize=1)
def kustomize_render() -> str:
    kubectl = tool("kubectl", "kubectl (the machine image's kubectl, 1.27 or later)")
    result = run([kubectl, "kustomize", str(K8S)])
    assert result.returncode == 0, result.stderr
    return result.stdout
