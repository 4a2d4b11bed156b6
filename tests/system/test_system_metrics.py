"""The live exporter's /metrics, with every family populated, passes ``promtool check metrics``
without a single warning and carries exactly the documented families and labels."""

from __future__ import annotations

import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.deploy_helpers import CLIENT_SERIES, FAMILIES, HISTOGRAMS
from tests.system.system_stack import Stack, expected_names

pytestmark = pytest.mark.system


@pytest.mark.parametrize("accept_gzip", [False, True], ids=["plain", "gzip"])
def test_live_metrics_pass_promtool_check_metrics(
    stack: Stack, promtool: str, accept_gzip: bool
) -> None:
    body = stack.metrics(accept_gzip)
    assert body.count(b"\n") > 1000  # the whole exposition, not an empty or early one
    result = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=60, check=False
    )
    output = (result.stdout + result.stderr).decode(errors="replace")
    assert (result.returncode, output) == (0, ""), output


def documented_labels(sample: str) -> set[str] | None:
    for family in HISTOGRAMS:
        if sample in (f"{family}_bucket", f"{family}_sum", f"{family}_count"):
            extra = {"le"} if sample.endswith("_bucket") else set()
            return set(FAMILIES[family]) | extra
    if sample in FAMILIES and sample not in HISTOGRAMS:
        return set(FAMILIES[sample])
    if sample in CLIENT_SERIES:
        return set(CLIENT_SERIES[sample])
    return None


def test_live_metrics_carry_the_documented_families_and_labels(stack: Stack) -> None:
    seen: set[str] = set()
    problems: set[str] = set()
    for family in text_string_to_metric_families(stack.metrics().decode()):
        for sample in family.samples:
            seen.add(sample.name)
            labels = documented_labels(sample.name)
            if labels is None:
                problems.add(f"undocumented series {sample.name}")
            elif set(sample.labels) != labels:
                problems.add(
                    f"{sample.name} has labels {sorted(sample.labels)}, not {sorted(labels)}"
                )
    missing = (expected_names() | set(CLIENT_SERIES)) - seen
    assert not missing, f"documented but not exposed: {sorted(missing)}"
    assert not problems, sorted(problems)
