"""The landing page as a person sees it: loaded in a real headless Chromium."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from exporter.web.landing import landing_handler
from tests.rig.table import SECRETS

from .landing_data import demo_landing

pytestmark = pytest.mark.system


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "chromium not installed (Debian package 'chromium'); needed to load the landing page"
    if os.environ.get("CDNVIDEO_REQUIRE_TOOLS") == "1":
        pytest.fail(reason + " and CDNVIDEO_REQUIRE_TOOLS=1")
    pytest.skip(reason)


async def browse(url: str, profile: Path, *extra: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *extra,
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=90)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    return out.decode()


def text_of(dom: str, css_class: str, account: str) -> str:
    section = dom.split(f'data-account="{account}"', 1)[1].split("</section>", 1)[0]
    m = re.search(rf'class="{css_class}"[^>]*>(.*?)</(?:dd|table)>', section, re.S)
    assert m, (css_class, section[:500])
    return re.sub(r"<[^>]+>", " ", m.group(1))


async def test_landing_page_renders_in_chromium(tmp_path: Path) -> None:
    chromium()
    async with aiohttp.ClientSession() as session:
        ctx, areas = await demo_landing(session)
        app = web.Application()
        app.router.add_get("/", landing_handler(ctx, areas))
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        try:
            url = str(server.make_url("/"))
            dom = await browse(url, tmp_path / "profile", "--dump-dom")
            shot = tmp_path / "landing.png"
            await browse(
                url, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1200,1400"
            )
        finally:
            await server.close()
    assert "<title>cdnvideo-exporter</title>" in dom
    assert dom.count('<section class="account"') == 2
    areas = text_of(dom, "areas", "demo-media")
    assert re.search(r"Traffic\s+OK", areas)
    assert re.search(r"Restream\s+failing", areas)
    assert re.search(r"Network DVR\s+waiting", areas)
    assert "2026-01-01 00:57:00 UTC" in text_of(dom, "window", "demo-media")
    assert "1234 of 1500" in text_of(dom, "quota", "demo-media")
    restream = text_of(dom, "restream", "demo-media")
    assert "res-7" in restream
    assert "Source stream is not published" in restream
    assert "res-8" not in restream
    # The hostile label arrived as text, not as an element the browser ran.
    assert '<script>alert("x")</script>' not in dom
    assert "&lt;script&gt;" in restream
    assert "node-dead-1" in text_of(dom, "dvr", "demo-media")
    shop = dom.split('data-account="demo-shop"', 1)[1]
    assert "All restream targets OK." not in shop  # stale figures are never "all good"
    assert re.search(r'class="none stale"[^>]*>Last seen healthy (never|\d+ \w+ ago)\.', shop)
    for href in ("/metrics", "/api/v1/openapi.json"):
        assert f'href="{href}"' in dom
    for secret in (*SECRETS, "leaked-pw"):
        assert secret not in dom
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("CDNVIDEO_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
