"""The landing page shows health, windows, failing targets, dead nodes and quota, escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from exporter.dvr.summary import DvrSummary
from exporter.exposition import FamilySelection
from exporter.restream.summary import RestreamSummary
from exporter.runtime.summary import account_summary
from exporter.talking_head.summary import TalkingHeadSummary
from exporter.traffic.summary import TrafficSummary
from exporter.web.landing import landing_handler, render_landing
from tests.rig.table import SECRETS
from tests.web.admin.conftest import make_context, make_service

from .landing_data import EVIL, NOW, demo_landing


async def page(**ctx_kw: Any) -> tuple[int, str, Any]:
    async with aiohttp.ClientSession() as session:
        ctx, areas = await demo_landing(session, **ctx_kw)
        app = web.Application()
        app.router.add_get("/", landing_handler(ctx, areas))
        async with TestClient(TestServer(app)) as client:
            resp = await client.get("/")
            return resp.status, await resp.text(), resp.headers


async def test_page_shows_what_an_operator_needs() -> None:
    status, text, headers = await page()
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert 'data-account="demo-media"' in text
    assert 'data-account="demo-shop"' in text
    assert "2026-01-01 00:57:00 UTC" in text  # window end, NOW - 180 s
    assert "Source stream is not published" in text
    assert "res-7" in text
    assert "res-8" not in text  # code 0 is not listed
    assert "node-dead-1" in text
    assert "node-ok-2" not in text
    assert "1234 of 1500" in text
    assert "+0.8% after 5 min, +0.1% after 15 min, 0 after 60 min" in text  # by age
    assert "not measured yet" in text.split('data-account="demo-shop"', 1)[1]
    assert "in_queue: 1" in text
    assert 'href="/metrics"' in text
    assert 'href="/api/v1/openapi.json"' in text
    assert "Documentation" in text
    assert "<script" not in text
    assert "&lt;script&gt;" in text


async def test_each_account_has_its_audit_line() -> None:
    _, text, _ = await page()
    media = text.split('data-account="demo-media"', 1)[1].split("</section>", 1)[0]
    line = media.split('<dd class="audit">', 1)[1].split("</dd>", 1)[0]
    assert "2025-12-31 23:00:00 UTC" in line  # NOW - 2 h
    assert "(2 h ago): differs: edge_requests_total +1, edge_status_200 +1;" in line
    assert "origin_requests_total" not in line  # equal keys are not listed
    assert "60 of 65 audited minutes equal" in line
    shop = text.split('data-account="demo-shop"', 1)[1].split("</section>", 1)[0]
    assert "no audit yet" in shop.split('<dd class="audit">', 1)[1].split("</dd>", 1)[0]


def section(text: str, css: str, account: str = "demo-media") -> str:
    """The table of class ``css`` in the account's section."""
    part = text.split(f'data-account="{account}"', 1)[1].split("</section>", 1)[0]
    return part.split(f'<table class="{css}">', 1)[1].split("</table>", 1)[0]


async def test_targets_stopped_on_purpose_are_listed_apart_from_failing_ones() -> None:
    _, text, _ = await page()
    failing = section(text, "restream")
    stopped = section(text, "restream-stopped")
    assert "res-7" in failing  # active, scheduled, code 3: what the alert pages for
    assert "&lt;script&gt;" in failing  # no activity or schedule known: counted as failing
    assert "res-9" not in failing
    assert "res-10" not in failing
    rows = stopped.split("<tr>")[2:]
    assert len(rows) == 2
    assert "res-9" in rows[0]
    assert "No status changes found" in rows[0]
    assert "resource inactive" in rows[0]
    assert "res-10" in rows[1]
    assert "outside its schedule" in rows[1]
    assert "Restream targets stopped on purpose" in text


async def test_page_carries_no_secret() -> None:
    _, text, _ = await page()
    for secret in (*SECRETS, "leaked-pw", "leaked-sid"):
        assert secret not in text
    assert "srt://t:9000?streamid=********#" in text  # masked by structure, as the admin API


async def test_learned_secrets_never_cut_platform_data_apart() -> None:
    async with aiohttp.ClientSession() as session:
        ctx, areas = await demo_landing(session)
        # A restream body's secrets that equal part of a host name and a description's words.
        ctx.redactor.learn("target", "not published")
        text = render_landing(ctx, areas)
    failing = section(text, "restream")
    assert "rtmp://target.example/app" in failing
    assert "Source stream is not published" in failing
    assert "********" not in failing.split("res-7", 1)[1].split("</tr>", 1)[0]


async def test_admin_link_only_when_admin_is_on() -> None:
    _, text, _ = await page(admin_enabled=False)
    assert "/api/v1/openapi.json" not in text
    assert "Admin API off" in text


async def test_an_empty_exporter_renders() -> None:
    async with aiohttp.ClientSession() as session:
        ctx = make_context("http://127.0.0.1:9", session)
        areas = make_service(ctx).areas
        ctx.accounts = ()
        assert "No accounts yet" in render_landing(ctx, areas)
        ctx.accounts = ("demo-media",)
        text = render_landing(ctx, areas)
        assert "No restream status yet." in text
        assert "waiting" in text
        assert EVIL not in text


async def test_figures_left_out_by_metrics_exclude_say_so_instead_of_all_good() -> None:
    async with aiohttp.ClientSession() as session:
        ctx, areas = await demo_landing(session)
        ctx.store.selection = FamilySelection(exclude=["^cdnvideo_dvr_alive$", "quota_left"])
        text = render_landing(ctx, areas)
    part = text.split('data-account="demo-media"', 1)[1].split("</section>", 1)[0]
    assert "node-dead-1" not in part
    assert "All DVR nodes alive" not in part
    assert "not exported (cdnvideo_dvr_alive left out by metrics.include/exclude)" in part
    assert "not exported (cdnvideo_talking_head_quota_left left out" in part
    assert "1234 of 1500" not in part
    assert "Source stream is not published" in part  # restream figures are still exported
    assert "2026-01-01 00:57:00 UTC" in part


async def test_the_areas_summarise_what_they_published_as_typed_values() -> None:
    async with aiohttp.ClientSession() as session:
        ctx, _ = await demo_landing(session)
        s = account_summary(ctx.store, "demo-media")
    assert list(s.areas) == ["traffic", "restream", "dvr", "talking_head"]  # the registry's
    traffic, restream = s.of(TrafficSummary), s.of(RestreamSummary)
    dvr, th = s.of(DvrSummary), s.of(TalkingHeadSummary)
    assert traffic.window_end == NOW - 180
    assert traffic.late_shares == ((5, 0.008), (15, 0.001), (60, 0.0))
    assert [t.resource_id for t in restream.failing] == ["res-7", EVIL]
    assert {t.resource_id: t.stopped_because for t in restream.stopped} == {
        "res-9": ("resource inactive",),
        "res-10": ("outside its schedule",),
    }
    assert restream.failing[0].description == "Source stream is not published"
    assert dvr.dead == (("live/main", "node-dead-1"),)
    assert (th.quota_left, th.quota_limit) == (1234, 1500)
    assert th.tasks == (("in_queue", 1.0),)
    assert restream.left_out == dvr.left_out == ()


def test_the_page_knows_no_metric_name() -> None:
    """The figures come typed from the areas' summaries, not by re-reading family names."""
    package = Path(__file__).resolve().parents[2] / "exporter"
    parts = [f"{area}/landing.py" for area in ("traffic", "restream", "dvr", "talking_head")]
    for module in (
        "web/landing.py",
        "web/pagekit.py",
        "web/problems.py",
        "areakit/page.py",
        *parts,
        "traffic/charts.py",
        "traffic/history.py",
    ):
        assert "cdnvideo_" not in (package / module).read_text(encoding="utf-8"), module


async def test_the_page_opens_with_a_line_per_account_of_what_is_wrong() -> None:
    _, text, _ = await page()
    summary = text.split('<section class="summary"', 1)[1].split("</section>", 1)[0]
    assert text.index('<section class="summary"') < text.index('<section class="account"')
    assert ">2 of 2 account(s) with problems</h2>" in summary
    media = summary.split('data-for="demo-media">', 1)[1].split("</li>", 1)[0]
    assert '<a href="#account-0-areas">down: Restream</a>' in media
    assert '<a href="#account-0-restream">2 restream targets failing</a>' in media
    assert '<a href="#account-0-dvr">1 dead DVR node</a>' in media
    shop = summary.split('data-for="demo-shop">', 1)[1].split("</li>", 1)[0]
    assert '<a href="#account-1-areas">stale: restream status</a>' in shop


def test_every_area_of_the_registry_has_its_part_of_the_page() -> None:
    """Each area declares its part of the page (``AreaDeclaration.landing``)."""
    from exporter.runtime.registry import declarations

    assert [d.name for d in declarations() if d.landing is not None] == [
        "traffic",
        "restream",
        "dvr",
        "talking_head",
    ]


async def test_page_says_why_a_new_counter_first_reads_0() -> None:
    """issue 51, point 9: a person's first look at /metrics shows new counters at 0."""
    _, text, _ = await page()
    header = text.split("</header>", 1)[0]
    assert "A new traffic counter reads 0 until a scrape has read that 0" in header
    assert "increase()" in header
