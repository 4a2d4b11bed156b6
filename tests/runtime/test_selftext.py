"""The self-metrics' text renderer writes exactly what prometheus-client's generate_latest
writes, at every render, as values change and series come and go."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Enum,
    Gauge,
    Histogram,
    Info,
    Metric,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from exporter.runtime.selfmetrics import SelfMetrics
from exporter.runtime.selftext import TextRenderer

ODD = ['say "hi"', "back\\slash", "new\nline", "ünïcödé", "", "a,b=c}"]


def test_the_self_metrics_render_as_generate_latest_does_at_every_render() -> None:
    metrics = SelfMetrics(process=False)
    renderer = TextRenderer(metrics.registry)
    for step, account in enumerate(ODD):
        metrics.up.labels(account, "traffic").set(step % 2)
        metrics.upstream_requests.labels("traffic", str(200 + step)).inc(step + 0.5)
        metrics.poll_duration.labels("traffic").observe(0.07 * step)
        metrics.start_traffic_account(account)
        metrics.traffic_windows.labels(account, "read").inc(step)
        if step == 3:
            metrics.forget_account(ODD[0])
        assert renderer.render() == generate_latest(metrics.registry)
    assert metrics.render() == generate_latest(metrics.registry)


def test_every_kind_of_family_renders_as_generate_latest_does() -> None:
    registry = CollectorRegistry()
    Counter("c", "a counter", ["l"], registry=registry).labels("x").inc(3)
    Gauge("g_bytes", "a gauge\nwith \\ in its help", unit="bytes", registry=registry).set(1e21)
    Histogram("h_seconds", "a histogram", buckets=(0.5, 1.0), registry=registry).observe(0.7)
    Info("build", "an info", registry=registry).info({"version": "1.2", "odd": ODD[0]})
    Enum("state", "an enum", states=["a", "b"], registry=registry).state("b")
    registry.register(_Custom())
    renderer = TextRenderer(registry)
    first = renderer.render()
    assert first == generate_latest(registry)
    assert renderer.render() == first  # the kept text gives the same bytes
    assert b'build_info{odd="say \\"hi\\"",version="1.2"} 1.0' in first  # escaped as theirs


class _Custom(Collector):
    """Families the shortcut leaves to generate_latest: a counter with ``_created``, a
    timestamp; and values generate_latest writes in its own way (NaN, infinities)."""

    def collect(self) -> Iterable[Metric]:
        created = CounterMetricFamily("made", "with created", labels=["k"])
        created.add_metric(["v"], 2.0, created=1700000000.0)
        stamped = GaugeMetricFamily("stamped", "with a timestamp")
        stamped.add_metric([], 4.0, timestamp=1700000000.5)
        odd = GaugeMetricFamily("odd", "odd values", labels=["v"])
        for name, value in (("nan", float("nan")), ("inf", float("inf")), ("neg", -1e-7)):
            odd.add_metric([name], value)
        dotted = GaugeMetricFamily("with.dot", "a name that is not a legacy name")
        dotted.add_metric([], 1.0)
        return [created, stamped, odd, dotted]


def test_plain_counters_and_gauges_are_read_without_their_collect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plain counter or gauge is read from its series directly (no ``Metric`` and no
    ``Sample`` per series built at each render); a gauge set from a function still goes
    through ``collect``. The bytes are generate_latest's."""
    disable_created_metrics()  # as SelfMetrics does (process-wide)
    registry = CollectorRegistry()
    counter = Counter("c", "a counter", ["l"], registry=registry)
    counter.labels("x").inc(3)
    counter.labels(ODD[0]).inc(0.25)
    gauge = Gauge("g", "a gauge", registry=registry)
    gauge.set(2)
    function = Gauge("f", "from a function", registry=registry)
    function.set_function(lambda: 7.0)
    expected = generate_latest(registry)
    renderer = TextRenderer(registry)
    collected: list[str] = []
    for metric in (counter, gauge, function):
        real = type(metric).collect
        monkeypatch.setattr(
            metric, "collect", lambda m=metric, real=real: collected.append(m._name) or real(m)
        )
    assert renderer.render() == expected
    assert renderer.render() == expected  # from the kept text
    assert collected == ["f", "f"]
