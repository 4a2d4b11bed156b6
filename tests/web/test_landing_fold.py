"""The landing page opens with what is wrong: in a real headless Chromium at 1280 px and at a
phone's 390 px, every account's problems are listed above the fold, each linked to its rows,
and those rows carry the warning colour."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from exporter.exposition import FragmentBuilder, StoreKey
from exporter.web.landing import render_landing
from tests.web.landing_data import STATUS_CODE, STATUS_INFO, demo_landing
from tests.web.test_landing_browser import browse, chromium

pytestmark = pytest.mark.system

# The page is loaded in a frame of the screen's size (headless Chromium's own window is at
# least 500 px wide); once laid out, the outer page writes into its DOM where the first
# marked problem, each account's summary line and each link's target are.
FRAME = """<!doctype html><html><body style="margin:0">
<iframe id="screen" src="/landing" style="width:%dpx;height:%dpx;border:0"></iframe>
<script>
document.getElementById("screen").addEventListener("load", (event) => {
  const doc = event.target.contentWindow.document, out = {lines: {}, targets: {}};
  const first = doc.querySelector("[data-problem]");
  out.first = first ? {text: first.textContent, bottom: first.getBoundingClientRect().bottom}
                    : null;
  for (const li of doc.querySelectorAll("section.summary li")) {
    out.lines[li.dataset.for] = {
      bottom: li.getBoundingClientRect().bottom, text: li.textContent,
      problem: li.classList.contains("problem"), color: getComputedStyle(li).color};
    for (const a of li.querySelectorAll("a")) {
      const target = doc.getElementById(a.getAttribute("href").slice(1));
      out.targets[a.getAttribute("href")] = target ?
        target.querySelectorAll("tr.problem").length : -1;
    }
  }
  out.rowColors = [...new Set([...doc.querySelectorAll("tr.problem td")].map(
    (td) => getComputedStyle(td).backgroundColor))];
  const p = document.createElement("pre");
  p.id = "measure";
  p.textContent = JSON.stringify(out);
  document.body.appendChild(p);
});
</script></body></html>"""
RED = "rgb(207, 34, 46)"  # #cf222e, the page's warning colour for what fails
TINT = "rgb(255, 245, 245)"  # #fff5f5, the background of a failing row


async def measured(tmp_path: Path, width: int, height: int) -> dict[str, object]:
    async with aiohttp.ClientSession() as session:
        ctx, areas = await demo_landing(session)
        b = FragmentBuilder()  # demo-shop, the second account, gets a failing target too
        target = ("demo-shop", "r1", "rtmp://origin/live/shop", "rtmp://t.example/app", "k")
        b.add(STATUS_CODE, target, 2)
        b.add(STATUS_INFO, (*target, "2", "Source stream not found"), 1)
        ctx.store.publish(StoreKey("restream", "demo-shop"), b.build())
        page = render_landing(ctx, areas)  # as served, without the frame-blocking headers

        async def landing(request: web.Request) -> web.Response:
            return web.Response(text=page, content_type="text/html")

        async def frame(request: web.Request) -> web.Response:
            return web.Response(text=FRAME % (width, height), content_type="text/html")

        app = web.Application()
        app.router.add_get("/", frame)
        app.router.add_get("/landing", landing)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        window = f"--window-size={max(width, 500) + 40},{height + 40}"
        try:
            url = str(server.make_url("/"))
            dom = await browse(url, tmp_path / f"p{width}", window, "--dump-dom")
            shot = tmp_path / f"landing-{width}.png"
            await browse(url, tmp_path / f"s{width}", window, f"--screenshot={shot}")
        finally:
            await server.close()
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("CDNVIDEO_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, f"{keep}.{width}.png")
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))  # type: ignore[no-any-return]


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
async def test_every_accounts_problems_are_above_the_fold_and_link_to_red_rows(
    tmp_path: Path, width: int, height: int
) -> None:
    chromium()
    seen = await measured(tmp_path, width, height)
    first = seen["first"]
    assert isinstance(first, dict)
    assert first["bottom"] <= height, first
    assert first["text"].startswith("demo-media: down: Restream")
    lines = seen["lines"]
    assert isinstance(lines, dict)
    assert set(lines) == {"demo-media", "demo-shop"}
    for account, line in lines.items():
        assert line["problem"] is True, account
        assert line["bottom"] <= height, (account, line)
        assert line["color"] == RED
    assert "1 restream target failing" in lines["demo-shop"]["text"]
    assert "1 dead DVR node" in lines["demo-media"]["text"]
    # Every link leads to rows marked in the warning colour.
    assert seen["targets"] == {
        "#account-0": 4,  # the section: its failing area, two failing targets, a dead node
        "#account-0-areas": 1,
        "#account-0-restream": 2,
        "#account-0-dvr": 1,
        "#account-1": 1,
        "#account-1-restream": 1,
    }
    assert seen["rowColors"] == [TINT]
