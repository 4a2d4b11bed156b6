"""The landing page on a 390 px wide phone: nothing wider than the screen (real Chromium)."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from exporter.web.landing import render_landing
from tests.web.landing_data import demo_landing
from tests.web.test_landing_browser import browse, chromium

pytestmark = pytest.mark.system

# Headless Chromium's window is at least 500 px wide, so the page is loaded in a 390 px wide
# frame (a phone's viewport); once it has laid out, the outer page writes the frame's
# document width and every element reaching past its right edge into its own DOM.
PHONE = """<!doctype html><html><body>
<iframe id="phone" src="/landing" style="width:390px;height:844px;border:0"></iframe>
<script>
document.getElementById("phone").addEventListener("load", (event) => {
  const win = event.target.contentWindow, doc = win.document, out = [];
  const width = doc.documentElement.clientWidth;  // the viewport less a scroll bar
  for (const el of doc.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.right > width + 0.5) {
      out.push(el.tagName + "." + el.className + ":" + Math.round(r.right));
    }
  }
  const p = document.createElement("pre");
  p.id = "measure";
  p.textContent = "viewport=" + win.innerWidth + " client=" + width + " scroll=" +
    doc.documentElement.scrollWidth + " over=" + out.slice(0, 12).join(",");
  document.body.appendChild(p);
});
</script></body></html>"""


async def test_the_landing_page_fits_a_390_px_screen(tmp_path: Path) -> None:
    chromium()
    async with aiohttp.ClientSession() as session:
        ctx, areas = await demo_landing(session)
        page = render_landing(ctx, areas)  # as served, without the frame-blocking headers

        async def landing(request: web.Request) -> web.Response:
            return web.Response(text=page, content_type="text/html")

        async def phone(request: web.Request) -> web.Response:
            return web.Response(text=PHONE, content_type="text/html")

        app = web.Application()
        app.router.add_get("/", phone)
        app.router.add_get("/landing", landing)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        try:
            dom = await browse(
                str(server.make_url("/")),
                tmp_path / "profile",
                "--window-size=800,900",
                "--virtual-time-budget=3000",
                "--dump-dom",
            )
        finally:
            await server.close()
    found = re.search(
        r'<pre id="measure">viewport=(\d+) client=(\d+) scroll=(\d+) over=(.*?)</pre>', dom, re.S
    )
    assert found, dom[-2000:]
    viewport, client, scroll = (int(found.group(i)) for i in (1, 2, 3))
    assert viewport == 390
    assert (scroll, found.group(4)) == (client, ""), f"wider than {client} px: {scroll} px"
