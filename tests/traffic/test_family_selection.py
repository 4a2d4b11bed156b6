"""metrics.include / metrics.exclude and the per-resource granularity, end to end: simulator
over HTTP -> poller -> store -> the exposition text a scrape gets."""

from __future__ import annotations

import re
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from exporter.exposition import FamilySelection, Store
from exporter.simulator import SimConfig
from exporter.support.platform_fields import STATUS_CODES
from exporter.traffic.families import RESOURCE, SPECS
from tests.traffic.test_against_simulator import Rig, ServerFactory, rig

CLASSES = ("2xx", "3xx", "4xx", "5xx")


def scrape(store: Store) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Family name -> samples, parsed from the rendered exposition."""
    text = store.render_sync().plain.decode()
    return {
        f.name: [(dict(s.labels), s.value) for s in f.samples]
        for f in text_string_to_metric_families(text)
    }


async def run(server: ServerFactory, selection: FamilySelection, **settings: Any) -> Rig:
    async with rig(server, SimConfig(resources_per_account=4)) as r:
        r.store = Store(r.clock, selection=selection)
        poller = r.poller(**settings)
        await r.drive(poller, 6 * 60)
        return r


async def test_exclude_removes_families_and_keeps_the_rest_exact(
    aiohttp_server: ServerFactory,
) -> None:
    every = await run(aiohttp_server, FamilySelection())
    cut = await run(
        aiohttp_server, FamilySelection(exclude=[r"^cdnvideo_resource_responses", "_median_"])
    )
    full, less = scrape(every.store), scrape(cut.store)
    gone = {"cdnvideo_resource_responses", "cdnvideo_resource_responses_per_second"}
    gone |= {"cdnvideo_resource_responses_by_class"}
    gone |= {"cdnvideo_resource_responses_by_class_per_second"}
    gone |= {"cdnvideo_account_response_time_median_seconds"}
    gone |= {"cdnvideo_resource_response_time_median_seconds"}
    assert gone <= set(full)
    assert set(less) == set(full) - gone
    for name in less:  # same simulator seed and clock: the kept families are identical
        assert less[name] == full[name], name
    edge = [v for labels, v in less["cdnvideo_account_requests"] if labels["side"] == "edge"]
    assert edge
    assert edge[0] > 0


async def test_include_keeps_only_matching_families(aiohttp_server: ServerFactory) -> None:
    r = await run(aiohttp_server, FamilySelection(include=["^cdnvideo_account_requests"]))
    got = scrape(r.store)
    assert set(got) == {"cdnvideo_account_requests", "cdnvideo_account_requests_per_second"}
    assert {labels["side"] for labels, _ in got["cdnvideo_account_requests"]} == {"edge", "origin"}


async def test_status_classes_per_resource_and_every_code_per_account(
    aiohttp_server: ServerFactory,
) -> None:
    every = await run(aiohttp_server, FamilySelection())
    classes = await run(aiohttp_server, FamilySelection(), resource_status_codes="classes")
    full, cls = scrape(every.store), scrape(classes.store)
    assert "cdnvideo_resource_responses" not in cls
    assert "cdnvideo_resource_responses_per_second" not in cls
    by_class = cls["cdnvideo_resource_responses_by_class"]
    assert {labels["class"] for labels, _ in by_class} == set(CLASSES)
    rates = {lab["class"] for lab, _ in cls["cdnvideo_resource_responses_by_class_per_second"]}
    assert rates == set(CLASSES)
    # The class series are the platform's class counts, the same as in the full view.
    assert by_class == full["cdnvideo_resource_responses_by_class"]
    assert len(by_class) == 4 * 2 * len(CLASSES)  # resources, sides
    # Account totals stay complete: every specific code, every class.
    specific = {c for c in STATUS_CODES if c not in CLASSES}
    assert {lab["code"] for lab, _ in cls["cdnvideo_account_responses"]} == specific
    assert cls["cdnvideo_account_responses"] == full["cdnvideo_account_responses"]
    assert cls["cdnvideo_account_responses_by_class"] == full["cdnvideo_account_responses_by_class"]


async def test_request_times_off_per_resource_only(aiohttp_server: ServerFactory) -> None:
    r = await run(aiohttp_server, FamilySelection(), resource_request_times=False)
    got = scrape(r.store)
    assert "cdnvideo_resource_response_time_median_seconds" not in got
    ranges = {lab["size_range"] for lab, _ in got["cdnvideo_account_response_time_median_seconds"]}
    assert len(ranges) == 8


async def test_excluded_families_are_never_built(aiohttp_server: ServerFactory) -> None:
    selection = FamilySelection(exclude=["^cdnvideo_resource_"])
    r = await run(aiohttp_server, selection)
    fragment = r.fragment()
    built = {spec.name for spec in fragment.samples}
    assert not any(name.startswith("cdnvideo_resource_") for name in built)
    assert RESOURCE.responses_total not in fragment.samples
    assert {s.name for s in SPECS if re.search("^cdnvideo_account_", s.name)} <= built
