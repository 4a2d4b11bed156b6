"""A real Prometheus scrapes the exporter (which reads the simulator) with the shipped rules.

Every dashboard panel query and template variable, and every alert expression, is run against
its HTTP API: a typo in a metric or label name, a label the exporter does not set, or a query
that only ever yields NaN fails here instead of showing an empty panel or never alerting.
Two alerts are driven end to end: a restream target forced into an error state makes
``CdnvideoRestreamTargetFailing`` go pending, and traffic minutes given up after a restart
fire ``CdnvideoTrafficWindowsMissed``.
"""

from __future__ import annotations

import time
from typing import Any

import promql_parser as pp
import pytest

from exporter.restream.identity import KeyFingerprint, url_label
from tests.deploy.deploy_helpers import (
    alert_rules,
    concrete,
    dashboard_targets,
    dashboards,
    variable_queries,
)
from tests.system.system_stack import (
    ACCOUNTS,
    JOB,
    MISSED_ACCOUNT,
    REMOTE_WRITE_PREFIX,
    SIM_TOKEN,
    NotYet,
    Stack,
    all_selected,
    has_data,
    summary,
    wait_for,
)

pytestmark = pytest.mark.system

DATA_SECONDS = 30.0  # rate() and histograms need a few scrapes (1 s apart) after the start
# The recorded month-to-date percentile steps once a minute: its first step after the bytes
# counters were first scraped may be a minute away.
PANEL_SECONDS = 75.0
ALERT_SECONDS = 30.0  # a restream poll (2 s), a scrape (1 s) and an evaluation (1 s)


def eventually_with_data(
    stack: Stack, queries: dict[str, str], seconds: float = DATA_SECONDS
) -> dict[str, str]:
    """Run each query until it returns data or ``seconds`` pass; {ref: why} of the rest."""
    pending = dict(queries)
    why: dict[str, str] = {}
    deadline = time.monotonic() + seconds
    while True:
        for ref, expr in list(pending.items()):
            reply = stack.query(expr)
            if has_data(reply):
                del pending[ref]
            else:
                shown = "" if ref.endswith(expr) else f"{expr}\n    "
                why[ref] = f"{shown}-> {summary(reply)}"
        if not pending or time.monotonic() >= deadline:
            return {ref: why[ref] for ref in pending}
        time.sleep(1.0)


def report(failures: dict[str, str]) -> str:
    return f"{len(failures)} without data:\n" + "\n".join(
        f"  {ref}: {detail}" for ref, detail in sorted(failures.items())
    )


def selectors(expr: str) -> list[str]:
    """Every vector selector of a PromQL expression, as PromQL: the name and matchers, without
    ``offset``/``@`` (a fresh Prometheus has no data an hour back)."""
    found: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, pp.VectorSelector):
            text = str(node)  # name{matchers} then the modifiers, if any
            found.append(text[: text.rindex("}") + 1])

    pp.walk(pp.parse(expr), visit)
    return found


def test_selectors_are_found() -> None:
    expr = 'max by (a) (rate(x{code!~"2.."}[5m])) > 0 and on (a) y unless z{a="}"} offset 1h'
    assert selectors(expr) == ['x{code!~"2.."}', "y{}", 'z{a="}"}']


# ---- dashboards ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def variable_options(stack: Stack) -> dict[str, list[str]]:
    """What each template variable offers ("file.json: $var" -> values), as Grafana would ask.

    Parent variables are set as a user would pick them: the first account, the job and the
    exporter's instance.
    """
    chosen = {"account": ACCOUNTS[0], "job": JOB, "instance": stack.instance}
    queries = dict(variable_queries(chosen))
    eventually_with_data(stack, queries)
    options: dict[str, list[str]] = {}
    for ref, expr in queries.items():
        label = expr.split("(", 1)[1].split(")", 1)[0].strip()  # count by (label) (...)
        options[ref] = sorted(s["metric"].get(label, "") for s in stack.vector(expr))
    return options


def test_every_template_variable_offers_values(
    stack: Stack, variable_options: dict[str, list[str]]
) -> None:
    empty = [ref for ref, values in variable_options.items() if not values]
    assert not empty, f"variables offering nothing: {empty}"
    for ref, values in variable_options.items():
        var = ref.split(": $", 1)[1]
        expected = {"account": ACCOUNTS[0], "job": JOB, "instance": stack.instance}.get(var)
        if expected is not None:
            assert expected in values, f"{ref} offers {values}, not {expected}"
    assert len(variable_options) >= 10


def remote_write(expr: str) -> bool:
    """A query of remote_write's series: this stack runs without it (no receiver), so they
    have no data here; tests/system/test_system_remote_write.py runs with one."""
    return REMOTE_WRITE_PREFIX in expr or "cdnvideo_minute_" in expr


def one_selected(name: str, options: dict[str, list[str]], stack: Stack) -> dict[str, str]:
    """One value per variable: the first account, the exporter, the first offered value."""
    values = {"account": ACCOUNTS[0], "job": JOB, "instance": stack.instance, "side": "edge"}
    for ref, offered in options.items():
        board, var = ref.split(": $", 1)
        if board == name and var not in values and offered:
            values[var] = offered[0]
    return values


@pytest.mark.parametrize("selection", ["all", "one"])
def test_every_panel_query_and_its_selectors_return_data(
    stack: Stack, variable_options: dict[str, list[str]], selection: str
) -> None:
    boards = dashboards()
    queries: dict[str, str] = {}
    for name, panel, target in dashboard_targets():
        if remote_write(target["expr"]):
            continue
        if selection == "all":
            values = all_selected(boards[name])
        else:
            values = one_selected(name, variable_options, stack)
        ref = f"{name}: {panel['title']} [{target['refId']}]"
        queries[ref] = expr = concrete(target["expr"], values)
        # `... or vector(0)` always has data: its selectors must have some too
        for sel in selectors(expr):
            queries[f"{ref} {sel}"] = sel
    assert len(queries) >= 80
    failures = eventually_with_data(stack, queries, PANEL_SECONDS)
    assert not failures, report(failures)


# ---- alert rules --------------------------------------------------------------------------


def test_prometheus_loaded_and_evaluates_every_rule(stack: Stack) -> None:
    names = sorted(rule["alert"] for rule in alert_rules())

    def evaluated() -> list[dict[str, Any]]:
        rules = [r for g in stack.api("rules?type=alert")["groups"] for r in g["rules"]]
        if unknown := [r["name"] for r in rules if r["health"] == "unknown"]:
            raise NotYet(f"not evaluated yet: {unknown}")
        return rules

    rules = wait_for("every rule evaluated", evaluated, DATA_SECONDS)
    assert sorted(r["name"] for r in rules) == names
    broken = {r["name"]: r.get("lastError") for r in rules if r["health"] != "ok"}
    assert not broken, broken


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alert_expression_evaluates(stack: Stack, rule: dict[str, Any]) -> None:
    reply = stack.query(rule["expr"])
    assert (reply["http_status"], reply["status"]) == (200, "success"), summary(reply)


def test_every_series_an_alert_selects_has_data(stack: Stack) -> None:
    """An alert expression is empty while all is well, so check what it reads instead: every
    selector in it (name, label names and values) matches scraped series."""
    queries = {
        f"{rule['alert']}: {sel}": sel
        for rule in alert_rules()
        for sel in selectors(rule["expr"])
        if not remote_write(sel)
    }
    assert len(queries) >= 15
    failures = eventually_with_data(stack, queries)
    assert not failures, report(failures)


def restream_target_to_break(stack: Stack) -> tuple[str, str, str, str]:
    """(account, resource id, target label, target URL) of a target that is OK, active and
    scheduled now; the label is the URL without credentials, as the exporter exports it."""
    healthy = stack.vector(
        "max by (account, resource_id, target) (cdnvideo_restream_status_code) == 0"
        " and on (account, resource_id) (max by (account, resource_id)"
        " (cdnvideo_restream_resource_active) == 1)"
        " and on (account, resource_id, target) (max by (account, resource_id, target)"
        " (cdnvideo_restream_scheduled) == 1)"
    )
    ok = {
        (s["metric"]["account"], s["metric"]["resource_id"], s["metric"]["target"]) for s in healthy
    }
    for account in ACCOUNTS:
        for resource in stack.sim("GET", f"/app/restream/v2/{account}/resources")["data"][
            "resources"
        ]:
            for entry in resource["restreams"]:
                url = entry["target_url"]
                key = (
                    account,
                    resource["resource_id"],
                    url_label(url, KeyFingerprint(SIM_TOKEN.encode()), entry.get("target_key", "")),
                )
                if key in ok:
                    return (*key, url)
    raise AssertionError(f"no healthy restream target to break among {sorted(ok)}")


def test_a_failing_restream_target_makes_its_alert_pending(stack: Stack) -> None:
    account, resource_id, target, target_url = restream_target_to_break(stack)
    mine = {"account": account, "resource_id": resource_id, "target": target}

    def alert_for_target() -> dict[str, Any] | None:
        for alert in stack.alerts("CdnvideoRestreamTargetFailing"):
            if mine.items() <= alert["labels"].items():
                return alert
        return None

    # healthy before (an alert from a failure that just ended leaves with the next evaluation)
    wait_for(f"no alert for {mine} before", lambda: alert_for_target() is None, ALERT_SECONDS)
    path = f"/_sim/restream/{account}/{resource_id}/force"
    stack.sim("POST", path, {"target_url": target_url, "code": 2})
    try:
        alert = wait_for(
            f"CdnvideoRestreamTargetFailing for {mine}", alert_for_target, ALERT_SECONDS
        )
    finally:
        stack.sim("DELETE", path)
    assert alert["state"] in ("pending", "firing"), alert
    assert alert["labels"]["severity"] == "critical"
    assert float(alert["value"]) == 2
    assert "(status 2)" in alert["annotations"]["summary"], alert["annotations"]
    # the description quotes the platform's text from cdnvideo_restream_status_info
    assert "Status 2: Source stream not found." in alert["annotations"]["description"], alert[
        "annotations"
    ]
    assert alert["annotations"]["runbook_url"].endswith("#cdnvideorestreamtargetfailing")


def test_missed_traffic_minutes_fire_their_alert(stack: Stack) -> None:
    """demo-shop started 30 minutes behind with catch_up_minutes 5: its first poll gave up on
    the older minutes (no `for`: fires at once)."""
    missed = stack.vector(
        f'cdnvideo_traffic_windows_total{{outcome="missed", account="{MISSED_ACCOUNT}"}}'
    )
    assert len(missed) == 1
    minutes = float(missed[0]["value"][1])
    assert minutes > 0

    def firing() -> list[dict[str, Any]] | None:
        alerts = stack.alerts("CdnvideoTrafficWindowsMissed")
        return alerts if any(a["state"] == "firing" for a in alerts) else None

    alerts = wait_for("CdnvideoTrafficWindowsMissed firing", firing, ALERT_SECONDS)
    assert [a["labels"]["account"] for a in alerts] == [MISSED_ACCOUNT], alerts
    (alert,) = alerts
    assert alert["labels"]["instance"] == stack.instance
    # increase() extrapolates to the whole range when Prometheus saw the counter start at 0;
    # the second branch of the rule gives the exact value when it first saw it above 0.
    assert minutes <= float(alert["value"]) <= minutes * 1.25, (alert["value"], minutes)
    assert (
        f"about {float(alert['value']):.0f} traffic minutes" in alert["annotations"]["description"]
    )
