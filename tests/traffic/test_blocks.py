"""A traffic fragment built from the label tuples the previous build kept (``traffic.blocks``):
the same series and values as the rule says, one set of tuples for resources that stay, none
kept for resources that left, new names for renamed ones."""

from __future__ import annotations

import gc
import random
from array import array

import pytest

from exporter.exposition import Fragment, MetricSpec
from exporter.support.platform_fields import SIDES, SIZE_RANGES, STATUS_CODES
from exporter.traffic.blocks import Carry
from exporter.traffic.counters import SHOWN, Series
from exporter.traffic.families import ACCOUNT, RESOURCE, RESOURCE_INFO, Families, View
from exporter.traffic.ledger import OTHER, AccountLedger
from exporter.traffic.parse import (
    COUNT_INDEX,
    COUNT_KEYS,
    GAUGE_INDEX,
    GAUGE_KEYS,
    ResourceRow,
    Row,
)
from exporter.traffic.transform import Latest, build_fragment
from exporter.traffic.windows import Window

T = 1_767_225_600
NAN = float("nan")
CODES = [c for c in STATUS_CODES if not c.endswith("xx")]
CLASSES = [c for c in STATUS_CODES if c.endswith("xx")]
Expected = list[tuple[tuple[str, ...], float]]


def values(
    rng: random.Random, size: int, holes: float, where: random.Random | None = None
) -> array[float]:
    """Random whole values, NaN where ``where`` (or ``rng``) says."""
    lacks = [(where or rng).random() < holes for _ in range(size)]
    return array("d", (NAN if gap else float(rng.randrange(10**6)) for gap in lacks))


def row(rng: random.Random, holes: float, where: random.Random | None = None) -> Row:
    lacks = [(where or rng).random() < holes for _ in GAUGE_KEYS]
    gauges = array("d", (NAN if gap else rng.random() * 1e6 for gap in lacks))
    return Row(values(rng, len(COUNT_KEYS), holes, where), gauges)


def ledger(
    rng: random.Random, keys: list[str], holes: float, stable: bool = False
) -> AccountLedger:
    """Series of ``keys``, NaN at random or (``stable``) at the same keys of each series
    in every call."""
    led = AccountLedger()
    led.totals = values(rng, len(COUNT_KEYS), holes)
    led.totals_shown[:] = bytearray([SHOWN]) * len(COUNT_KEYS)
    for key in keys:
        s = led.series[key] = Series(f"n{key}", f"{key}.example")
        s.values = values(rng, len(COUNT_KEYS), holes, random.Random(key) if stable else None)
        s.shown[:] = bytearray([SHOWN]) * len(COUNT_KEYS)
    return led


def counters(f: Families, head: tuple[str, ...], v: array[float]) -> dict[MetricSpec, Expected]:
    """What the rule says a series' counters are: every key it has, side by side."""

    def each(keys: list[tuple[tuple[str, ...], str]]) -> Expected:
        return [
            ((*head, *t), v[COUNT_INDEX[k]])
            for t, k in keys
            if v[COUNT_INDEX[k]] == v[COUNT_INDEX[k]]
        ]

    return {
        f.requests_total: each([((s,), f"{s}_requests_total") for s in SIDES]),
        f.responses_total: each([((s, c), f"{s}_status_{c}") for s in SIDES for c in CODES]),
        f.responses_by_class_total: each(
            [((s, c), f"{s}_status_{c}") for s in SIDES for c in CLASSES]
        ),
        f.transferred_bytes_total: each([((s,), f"{s}_transferred_bytes") for s in SIDES]),
        f.edge_hit_bytes_total: each([((), "edge_hit_bytes")]),
    }


def gauges(f: Families, head: tuple[str, ...], r: Row, w: Window) -> dict[MetricSpec, Expected]:
    """What the rule says a row's gauges are."""
    c, g, seconds = r.counts, r.gauges, w.end - w.start

    def rate(keys: list[tuple[tuple[str, ...], str]]) -> Expected:
        return [
            ((*head, *t), c[COUNT_INDEX[k]] / seconds)
            for t, k in keys
            if c[COUNT_INDEX[k]] == c[COUNT_INDEX[k]]
        ]

    def gauge(keys: list[tuple[tuple[str, ...], str]], by: float = 1) -> Expected:
        return [
            ((*head, *t), g[GAUGE_INDEX[k]] / by)
            for t, k in keys
            if g[GAUGE_INDEX[k]] == g[GAUGE_INDEX[k]]
        ]

    return {
        f.bandwidth: gauge([((s,), f"{s}_bandwidth") for s in SIDES], 8),
        f.requests_per_second: rate([((s,), f"{s}_requests_total") for s in SIDES]),
        f.responses_per_second: rate([((s, c), f"{s}_status_{c}") for s in SIDES for c in CODES]),
        f.responses_by_class_per_second: rate(
            [((s, c), f"{s}_status_{c}") for s in SIDES for c in CLASSES]
        ),
        f.response_time_median: gauge(
            [((s, x), f"{s}_request_time_{x}") for s in SIDES for x in SIZE_RANGES]
        ),
        f.edge_hit_ratio: gauge([((), "edge_hit_ratio")]),
        f.edge_hit_bytes_per_second: rate([((), "edge_hit_bytes")]),
        f.window_end: [(head, float(w.end))],
    }


def expected(led: AccountLedger, latest: Latest) -> dict[MetricSpec, Expected]:
    out: dict[MetricSpec, Expected] = {}

    def add(part: dict[MetricSpec, Expected]) -> None:
        for spec, rows in part.items():
            out.setdefault(spec, []).extend(rows)

    add(counters(ACCOUNT, ("acme",), led.totals))
    add(gauges(ACCOUNT, ("acme",), latest.totals, latest.window))
    for key in sorted(led.series):
        add(counters(RESOURCE, ("acme", key), led.series[key].values))
        s = led.series[key]
        add({RESOURCE_INFO: [(("acme", key, s.name, s.cname), 1.0)]})
    for r in latest.named:
        add(gauges(RESOURCE, ("acme", r.id, r.name, r.cname), r.row, latest.window))
    if latest.other is not None:
        add(gauges(RESOURCE, ("acme", OTHER, OTHER, ""), latest.other, latest.window))
    return out


def built(f: Fragment) -> dict[MetricSpec, Expected]:
    return {spec: list(rows) for spec, rows in f.samples.items() if spec in expected_specs()}


def expected_specs() -> set[MetricSpec]:
    return {*ACCOUNT.all(), *RESOURCE.all(), RESOURCE_INFO}


@pytest.mark.parametrize("seed", range(12))
def test_each_build_has_the_series_and_values_the_rule_says(seed: int) -> None:
    """Rows with keys missing here and there (at random, or at the same keys each minute),
    resources coming, going, renamed and ranked anew each minute: every build, against the
    previous one or not, is what the rule says; a resource that stays with the same keys
    keeps its label tuples."""
    rng = random.Random(seed)
    holes = rng.choice([0.0, 0.02, 0.3])
    stable = seed % 2 == 0
    keys = [str(100 + i) for i in range(30)]
    previous: Fragment | None = None
    for minute in range(4):
        present = sorted(rng.sample(keys, 20))
        led = ledger(rng, present, holes, stable)
        w = Window(T + 60 * minute, T + 60 * minute + 60)
        named = [
            ResourceRow(
                k,
                f"n{k}" if rng.random() < 0.8 else f"renamed{minute}",
                f"{k}.example",
                row(rng, holes, random.Random(f"g{k}") if stable else None),
            )
            for k in rng.sample(present, 15)
        ]
        latest = Latest(w, row(rng, holes), tuple(named), row(rng, holes) if minute % 2 else None)
        against = previous if seed % 3 else None
        fragment = build_fragment("acme", led, latest, previous=against)
        assert built(fragment) == expected(led, latest)
        if against is not None and (stable or not holes):
            for spec in (RESOURCE.responses_total, RESOURCE.responses_per_second):
                old = {t: t for t in against.samples[spec].labels}
                shared = [t for t in fragment.samples[spec].labels if t in old]
                assert shared, spec.name
                assert all(old[t] is t for t in shared), spec.name
        previous = fragment


def test_a_resource_that_stays_keeps_its_tuples_and_one_that_left_is_not_kept() -> None:
    rng = random.Random(1)
    led = ledger(rng, ["101", "102", "103"], 0.0)
    w = Window(T, T + 60)
    rows = {
        k: ResourceRow(k, f"n{k}", f"{k}.example", row(rng, 0.0)) for k in ("101", "102", "103")
    }
    first = build_fragment("acme", led, Latest(w, row(rng, 0.0), tuple(rows.values())))
    first.packed()
    del led.series["103"]
    ranked = (rows["102"], rows["101"])  # another order, 103 gone
    second = build_fragment("acme", led, Latest(w, row(rng, 0.0), ranked), previous=first)
    second.packed(first)
    carried = second.carry
    assert isinstance(carried, Carry)
    for scope in ("counted", "info", "gauged"):  # where the resources are: those of now
        assert {head[1] for head in carried.scopes[scope].heads} == {"101", "102"}
    for spec in (
        RESOURCE.responses_total,
        RESOURCE.bandwidth,
        RESOURCE.response_time_median,
        RESOURCE_INFO,
    ):
        old = {t: t for t in first.samples[spec].labels}
        new = list(second.samples[spec].labels)
        assert new, spec.name
        assert all(old[t] is t for t in new), spec.name  # the same objects
    # what the second fragment carries does not lead back to the first one
    assert not any(r is first or r is first.carry for r in reachable(second))


def test_a_renamed_resource_gets_new_gauge_and_info_labels_and_keeps_its_counters() -> None:
    rng = random.Random(2)
    led = ledger(rng, ["101"], 0.0)
    w = Window(T, T + 60)
    www = ResourceRow("101", "www", "www.acme.example", row(rng, 0.0))
    first = build_fragment("acme", led, Latest(w, row(rng, 0.0), (www,)))
    led.series["101"].name, led.series["101"].cname = "web", "web.acme.example"
    web = ResourceRow("101", "web", "web.acme.example", www.row)
    second = build_fragment("acme", led, Latest(w, row(rng, 0.0), (web,)), previous=first)
    text = b"".join(second.rendered().values()).decode()
    assert 'resource_name="www"' not in text
    assert (
        'cdnvideo_resource_info{account="acme",resource="101",resource_name="web",'
        'cname="web.acme.example"} 1' in text
    )
    assert (
        'cdnvideo_resource_bandwidth_bytes_per_second{account="acme",resource="101",resource_name="web",'
        in text
    )
    a, b = first.samples[RESOURCE.requests_total], second.samples[RESOURCE.requests_total]
    assert all(x is y for x, y in zip(a.labels, b.labels, strict=True))


def test_a_changed_view_takes_nothing_over() -> None:
    rng = random.Random(3)
    led = ledger(rng, ["101"], 0.0)
    first = build_fragment("acme", led, None)
    classes = View.of(View().selection, "classes", True)
    second = build_fragment("acme", led, None, classes, previous=first)
    assert not second.samples[RESOURCE.responses_total]
    a, b = first.samples[RESOURCE.requests_total], second.samples[RESOURCE.requests_total]
    assert list(a.labels) == list(b.labels)
    assert not any(x is y for x, y in zip(a.labels, b.labels, strict=True))
    # packed against the first, equal tuples are the first's again (nothing else holds them)
    first.packed()
    second.packed(first)
    assert second.samples[RESOURCE.requests_total].labels[0] is a.labels[0]


def reachable(root: object) -> list[object]:
    """Objects reachable from ``root`` through containers (the fragment's own graph)."""
    seen: dict[int, object] = {id(root): root}
    todo = [root]
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if id(ref) not in seen and not isinstance(ref, (str, float, int, type)):
                seen[id(ref)] = ref
                todo.append(ref)
    return list(seen.values())
