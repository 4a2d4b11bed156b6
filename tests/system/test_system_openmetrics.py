"""A real Prometheus scrapes the exporter in OpenMetrics 1.0 (its default ``Accept`` header
puts ``application/openmetrics-text`` first) and reads every counter as an OpenMetrics counter.

Prometheus keeps each family's metadata under the name its TYPE line gives: the text format
names a counter family ``x_total``, OpenMetrics names it ``x``. Metadata under ``x`` with type
counter, next to samples named ``x_total``, shows the scrape was OpenMetrics and parsed as such.
"""

from __future__ import annotations

import pytest

from tests.system.system_stack import JOB, Stack, has_data, wait_for

pytestmark = pytest.mark.system

COUNTERS = (
    "cdnvideo_account_requests_total",
    "cdnvideo_resource_responses_total",
    "cdnvideo_upstream_requests_total",  # a self-metric, from prometheus-client's registry
)


def test_prometheus_scrapes_openmetrics(stack: Stack) -> None:
    targets = stack.api("targets")["activeTargets"]
    ours = [t for t in targets if t["labels"]["job"] == JOB]
    assert ours
    assert all(t["health"] == "up" for t in ours), ours
    for counter in COUNTERS:
        family = counter.removesuffix("_total")

        def metadata(family: str = family) -> list[dict[str, str]] | None:
            found: list[dict[str, str]] = stack.api(f"metadata?metric={family}").get(family, [])
            return found or None  # not scraped yet

        entries = wait_for(f"metadata of {family}", metadata, 30.0)
        assert {e["type"] for e in entries} == {"counter"}, entries
        assert stack.api(f"metadata?metric={counter}") == {}, f"{counter} typed as text format"
        assert has_data(stack.query(counter)), counter
    assert has_data(stack.query(f'up{{job="{JOB}"}} == 1'))
