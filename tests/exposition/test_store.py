"""Fragments and the Store: grouping, escaping, staleness, gzip, off-loop rendering, promtool."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import shutil
import subprocess
import threading

import pytest
from structlog.testing import capture_logs
from structlog.typing import EventDict

from exporter.exposition import Fragment, FragmentBuilder, MetricSpec, Store, StoreKey
from exporter.exposition.deflate import deflate
from exporter.exposition.lines import format_value
from exporter.exposition.store import BACKGROUND_NOTE, AfterRender, Exposition
from exporter.runtime import tuning
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock

SAFETY_SECONDS = 60  # only a broken build waits so long: the test fails instead of hanging

BANDWIDTH = MetricSpec(
    "cdnvideo_account_bandwidth_bytes_per_second",
    "gauge",
    "Edge or origin bandwidth in bytes per second.",
    ("account", "side"),
)
REQUESTS = MetricSpec(
    "cdnvideo_account_requests_total", "counter", "Requests.", ("account", "side")
)
ALIVE = MetricSpec("cdnvideo_dvr_alive", "gauge", "1 when alive.", ("account", "stream", "host"))


def fragment(account: str, edge: float, origin: float = 1.0) -> Fragment:
    b = FragmentBuilder()
    b.declare(BANDWIDTH, REQUESTS)
    b.add(BANDWIDTH, (account, "edge"), edge)
    b.add(BANDWIDTH, (account, "origin"), origin)
    b.add(REQUESTS, (account, "edge"), 10)
    return b.build()


def store(clock: FakeClock | None = None, extra: bytes | None = None) -> Store:
    return Store(clock or FakeClock(), (lambda: extra) if extra is not None else None)


# --- rendering ----------------------------------------------------------------------------------
def test_the_extra_text_is_compressed_at_the_fastest_level_every_render() -> None:
    """The self-metrics are compressed again at every render (fragments once per change)."""
    extra = b"".join(b'cdnvideo_up{account="a%d",area="traffic"} 1\n' % i for i in range(300))
    s = store(extra=extra)
    for _ in range(2):
        body = s.render_sync().gzipped
        assert deflate(extra, 1).data in body
        assert deflate(extra, 6).data not in body
        assert gzip.decompress(body) == extra


def test_families_are_grouped_with_one_help_and_type() -> None:
    s = store()
    s.publish(StoreKey("traffic", "shop"), fragment("shop", 2.5))
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1e6))
    text = s.render_sync().plain.decode()
    assert text == (
        f"# HELP cdnvideo_account_bandwidth_bytes_per_second Edge or origin bandwidth in bytes "
        f"per second.{BACKGROUND_NOTE}\n"
        "# TYPE cdnvideo_account_bandwidth_bytes_per_second gauge\n"
        'cdnvideo_account_bandwidth_bytes_per_second{account="acme",side="edge"} 1000000\n'
        'cdnvideo_account_bandwidth_bytes_per_second{account="acme",side="origin"} 1\n'
        'cdnvideo_account_bandwidth_bytes_per_second{account="shop",side="edge"} 2.5\n'
        'cdnvideo_account_bandwidth_bytes_per_second{account="shop",side="origin"} 1\n'
        f"# HELP cdnvideo_account_requests_total Requests.{BACKGROUND_NOTE}\n"
        "# TYPE cdnvideo_account_requests_total counter\n"
        'cdnvideo_account_requests_total{account="acme",side="edge"} 10\n'
        'cdnvideo_account_requests_total{account="shop",side="edge"} 10\n'
    )
    assert s.render_sync().series == 6


def test_label_values_and_help_are_escaped() -> None:
    spec = MetricSpec("cdnvideo_x", "gauge", 'Help with \\ and\nnewline "quoted".', ("name",))
    b = FragmentBuilder()
    b.add(spec, ('a "quoted" \\ back\nslash',), 1)
    s = store()
    s.publish(StoreKey("restream", "acme"), b.build())
    lines = s.render_sync().plain.decode().splitlines()
    assert lines[0] == (
        f'# HELP cdnvideo_x Help with \\\\ and\\nnewline "quoted".{BACKGROUND_NOTE}'
    )
    assert lines[2] == 'cdnvideo_x{name="a \\"quoted\\" \\\\ back\\nslash"} 1'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (42.0, "42"),
        (-3.0, "-3"),
        (0.125, "0.125"),
        (1e-05, "1e-05"),
        (1e20, "1e+20"),
        (float("nan"), "NaN"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
    ],
)
def test_values_are_formatted_for_the_text_format(value: float, text: str) -> None:
    assert format_value(value) == text


def test_declared_family_without_samples_is_left_out() -> None:
    b = FragmentBuilder()
    b.declare(ALIVE)
    s = store()
    s.publish(StoreKey("dvr", "acme"), b.build())
    assert s.render_sync().plain == b""


def test_stale_fragment_is_left_out_but_still_readable() -> None:
    clock = FakeClock()
    s = store(clock)
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1), max_age=300)
    s.publish(StoreKey("traffic", "shop"), fragment("shop", 1))  # no max_age: never stale
    clock.advance(300)
    assert b'account="acme"' in s.render_sync().plain  # exactly max_age old is still fresh
    clock.advance(1)
    body = s.render_sync().plain
    assert b'account="acme"' not in body
    assert b'account="shop"' in body
    assert s.fragment(StoreKey("traffic", "acme")) is None
    assert s.fragment(StoreKey("traffic", "acme"), include_stale=True) is not None
    assert s.keys() == [StoreKey("traffic", "acme"), StoreKey("traffic", "shop")]


def test_publish_replaces_and_drop_removes() -> None:
    s = store()
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 7))
    assert s.fragment(StoreKey("traffic", "acme")).value(BANDWIDTH, side="edge") == 7  # type: ignore[union-attr]
    s.drop(StoreKey("traffic", "acme"))
    s.drop(StoreKey("traffic", "unknown"))
    assert s.keys() == []
    assert s.render_sync().plain == b""


def test_drop_account_drops_every_area_of_that_account_only() -> None:
    s = store()
    for key in (
        StoreKey("traffic", "acme"),
        StoreKey("restream_history", "acme"),
        StoreKey("restream", "acme-2"),
        StoreKey("dvr", "shop"),
    ):
        s.publish(key, fragment(key.account, 1))
    s.drop_account("acme")
    assert s.keys() == [StoreKey("dvr", "shop"), StoreKey("restream", "acme-2")]
    assert b'account="acme"' not in s.render_sync().plain


def test_gzip_body_decompresses_to_the_plain_body() -> None:
    s = store(extra=b"# HELP cdnvideo_up x\n")
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
    exposition = s.render_sync()
    assert gzip.decompress(exposition.gzipped) == exposition.plain
    assert exposition.plain


def test_self_metrics_are_appended() -> None:
    metrics = SelfMetrics()
    metrics.up.labels("acme", "traffic").set(1)
    s = Store(FakeClock(), metrics.render)
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
    text = s.render_sync().plain.decode()
    assert text.index("cdnvideo_account_requests_total") < text.index("# HELP cdnvideo_up ")
    assert 'cdnvideo_up{account="acme",area="traffic"} 1.0' in text
    assert "cdnvideo_exporter_build_info{branch=" in text


def test_conflicting_specs_of_one_name_are_an_error() -> None:
    other = MetricSpec(BANDWIDTH.name, "gauge", "Different help.", BANDWIDTH.labels)
    b = FragmentBuilder()
    b.add(other, ("x", "edge"), 1)
    s = store()
    s.publish(StoreKey("a", "x"), fragment("acme", 1))
    s.publish(StoreKey("b", "x"), b.build())
    with pytest.raises(ValueError, match="declared twice with different specs"):
        s.render_sync()


async def test_render_runs_in_a_worker_thread_and_swaps_the_body_in() -> None:
    threads: list[int] = []

    def extra() -> bytes:
        threads.append(threading.get_ident())
        return b""

    s = Store(FakeClock(), extra)
    assert s.exposition.plain == b""
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
    exposition = await s.render()
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()
    assert s.exposition is exposition
    assert b'account="acme"' in s.exposition.plain


class Renders:
    """Reports the store's renders as events: a good one asks for the extra text once, a failed
    one logs ``render_failed``."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.good = asyncio.Event()
        self.failed = asyncio.Event()

    def extra(self) -> bytes:  # called in the render's worker thread
        self._loop.call_soon_threadsafe(self.good.set)
        return b""

    def watch(self, _: object, __: str, event: EventDict) -> EventDict:
        if event.get("event") == "render_failed":
            self.failed.set()
        return event

    async def until_served(self, s: Store, text: bytes) -> None:
        """Wait for good renders until the served body has ``text``. A render asks for the
        extra text before its body is swapped in, so the last render's event can come before
        the swap: look again shortly after each wake-up rather than wait for a render that a
        store with nothing new to render never starts."""
        async with asyncio.timeout(SAFETY_SECONDS):
            while text not in s.exposition.plain:
                self.good.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.good.wait(), 0.05)


async def test_renderer_picks_up_changes_and_survives_a_failing_render() -> None:
    renders = Renders()
    s = Store(FakeClock(), renders.extra)
    with capture_logs([renders.watch]) as logs:
        task = asyncio.create_task(s.run_renderer(idle_seconds=0.05, settle_seconds=0.0))
        try:
            s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
            await renders.until_served(s, b"acme")
            good = s.exposition
            bad = FragmentBuilder()
            bad.add(MetricSpec(BANDWIDTH.name, "gauge", "other", BANDWIDTH.labels), ("x", "y"), 1)
            s.publish(StoreKey("zzz", "bad"), bad.build())
            await asyncio.wait_for(renders.failed.wait(), SAFETY_SECONDS)
            assert not task.done()
            assert s.exposition is good  # the last good body is still served
            s.drop(StoreKey("zzz", "bad"))
            s.publish(StoreKey("traffic", "shop"), fragment("shop", 1))
            await renders.until_served(s, b"shop")  # rendering went on after the failure
        finally:
            task.cancel()
    failed = [e for e in logs if e["event"] == "render_failed"]
    assert failed[0]["error"].startswith("ValueError: metric cdnvideo_")


async def test_renderer_reports_changed_and_quiet_renders_to_the_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Full collections wait for a quiet moment: the renderer tells the collector which
    renders followed a change and which did not (exporter.support.collector)."""
    from exporter.support import collector

    calls: list[str] = []
    quiet = threading.Event()

    def on_quiet() -> bool:
        calls.append("quiet")
        quiet.set()
        return False

    monkeypatch.setattr(collector, "changed", lambda: calls.append("changed") or False)
    monkeypatch.setattr(collector, "quiet", on_quiet)
    renders = Renders()
    s = Store(FakeClock(), renders.extra, after_render=tuning.after_render)
    task = asyncio.create_task(s.run_renderer(idle_seconds=0.05, settle_seconds=0.0))
    try:
        s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
        await renders.until_served(s, b"acme")
        assert await asyncio.to_thread(quiet.wait, SAFETY_SECONDS)
    finally:
        task.cancel()
    assert calls[0] == "changed"
    assert calls.index("quiet") > 0


class RenderLog(Store):
    """A store that notes each exposition its background renders produced."""

    def __init__(self, after_render: AfterRender) -> None:
        super().__init__(FakeClock(), after_render=after_render)
        self.rendered: list[Exposition] = []

    def render_sync(self) -> Exposition:
        exposition = super().render_sync()
        self.rendered.append(exposition)
        return exposition


async def test_renderer_calls_after_render_once_per_render_with_its_exposition() -> None:
    """The store only calls the hook it was given (the daemon's tuning gives memory back there):
    once per render, after the body is swapped in, saying whether a change preceded it."""
    hooked: list[tuple[bool, Exposition, bool]] = []
    enough = threading.Event()

    def after_render(changed: bool, exposition: Exposition) -> None:
        hooked.append((changed, exposition, exposition is s.exposition))
        if len(hooked) >= 3:
            enough.set()

    s = RenderLog(after_render)
    task = asyncio.create_task(s.run_renderer(idle_seconds=0.05, settle_seconds=0.0))
    try:
        s.publish(StoreKey("traffic", "acme"), fragment("acme", 1))
        assert await asyncio.to_thread(enough.wait, SAFETY_SECONDS)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # the render in flight when the task was cancelled may not have reached its hook
    assert [exposition for _, exposition, _ in hooked] == s.rendered[: len(hooked)]
    assert len(s.rendered) - len(hooked) in (0, 1)
    assert len({id(exposition) for _, exposition, _ in hooked}) == len(hooked)
    assert [swapped for _, _, swapped in hooked] == [True] * len(hooked)
    assert hooked[0][0] is True  # the first render followed the publish
    assert b"acme" in hooked[0][1].plain
    assert [changed for changed, _, _ in hooked[1:]] == [False] * (len(hooked) - 1)


# --- builder and spec checks ------------------------------------------------------------------
def test_builder_refuses_the_wrong_number_of_labels() -> None:
    with pytest.raises(ValueError, match=r"expected labels \('account', 'side'\), got \('acme',\)"):
        FragmentBuilder().add(BANDWIDTH, ("acme",), 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("cdnvideo_requests", "counter", "h"), "counter cdnvideo_requests must end in _total"),
        (("cdnvideo_x_total", "gauge", "h"), "gauge cdnvideo_x_total must not end in _total"),
        (("cdnvideo-x", "gauge", "h"), "'cdnvideo-x' is not a valid metric name"),
        (("cdnvideo_x", "gauge", "h", ("a-b",)), "cdnvideo_x: 'a-b' is not a valid label name"),
        (("cdnvideo_x", "gauge", "h", ("__name",)), "cdnvideo_x: '__name' is not a valid label"),
        (("cdnvideo_x", "gauge", "h", ("a", "a")), "cdnvideo_x: duplicate label names"),
    ],
)
def test_spec_refuses_names_prometheus_would_not_take(
    args: tuple[object, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MetricSpec(*args)  # type: ignore[arg-type]


def test_fragment_value_matches_given_labels_and_refuses_unknown_ones() -> None:
    frag = fragment("acme", 5, origin=3)
    assert frag.value(BANDWIDTH, side="origin") == 3
    assert frag.value(BANDWIDTH, account="acme", side="edge") == 5
    assert frag.value(BANDWIDTH, account="other") is None
    assert frag.value(ALIVE) is None
    with pytest.raises(ValueError, match=r"has no label\(s\) \['sides'\]"):
        frag.value(BANDWIDTH, sides="edge")
    assert frag.series_count() == 3


# --- promtool -----------------------------------------------------------------------------------
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CDNVIDEO_REQUIRE_TOOLS") == "1":
            pytest.fail("promtool is required (CDNVIDEO_REQUIRE_TOOLS=1) but not on PATH")
        pytest.skip("promtool not on PATH (Debian package 'prometheus'); set up by .ci/run")
    return path


def test_exposition_passes_promtool_check_metrics() -> None:
    tool = promtool()
    metrics = SelfMetrics()
    metrics.up.labels("acme", "traffic").set(1)
    metrics.poll_duration.labels("traffic").observe(0.2)
    metrics.upstream_requests.labels("traffic", "200").inc()
    metrics.upstream_duration.labels("traffic").observe(0.05)
    metrics.traffic_windows.labels("acme", "read").inc()
    metrics.series_dropped.inc()
    s = Store(FakeClock(), metrics.render)
    s.publish(StoreKey("traffic", "acme"), fragment("acme", 1234.5))
    s.publish(StoreKey("traffic", 'sh"op'), fragment('sh"op\\\n', float("nan")))
    b = FragmentBuilder()
    b.add(ALIVE, ("acme", "live/main", "node-1"), 1)
    b.add(ALIVE, ("acme", "live/main", "node-2"), 0)
    s.publish(StoreKey("dvr", "acme"), b.build())
    body = s.render_sync().plain
    result = subprocess.run(
        [tool, "check", "metrics"], input=body, capture_output=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), body.decode()
