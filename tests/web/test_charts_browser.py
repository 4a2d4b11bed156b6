"""The landing page's traffic charts as a person sees them: a real Chromium at desktop and
phone widths, after an hour and a quarter of real traffic polls against the simulator."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from tests.rig.daemon import running

from .devtools import Chromium
from .test_landing_browser import chromium

pytestmark = pytest.mark.system

POLLED, IDLE = "demo-media", "demo-shop"  # only the first one's traffic is polled
MINUTES = 75  # more than the hour the charts keep

READ_BACK = """(() => {
  const section = (a) => document.querySelector(`section[data-account="${a}"]`);
  const charts = [...section("POLLED_ACCOUNT").querySelectorAll("svg.chart")].map((svg) => {
    const box = svg.getBoundingClientRect();
    const line = svg.querySelector("polyline");
    const drawn = line ? line.getBBox() : {width: 0, height: 0};
    return {name: svg.closest("figure").dataset.chart, left: box.left, width: box.width,
            height: box.height, points: Number(svg.dataset.points),
            lineWidth: drawn.width, lineHeight: drawn.height,
            stroke: line ? getComputedStyle(line).stroke : ""};
  });
  const bars = [...section("POLLED_ACCOUNT").querySelectorAll("table.top svg.bar rect")]
    .map((r) => r.getBoundingClientRect().width);
  const right = Math.max(...[...document.body.querySelectorAll("*")]
    .map((el) => el.getBoundingClientRect().right));
  return {charts, bars, right, inner: window.innerWidth,
          scroll: document.documentElement.scrollWidth,
          idle: section("IDLE_ACCOUNT").querySelector(".charts-none")?.textContent ?? "",
          idleCharts: section("IDLE_ACCOUNT").querySelectorAll("svg.chart").length,
          scripts: document.scripts.length};
})()""".replace("POLLED_ACCOUNT", POLLED).replace("IDLE_ACCOUNT", IDLE)


@pytest.fixture
async def landing_url() -> AsyncIterator[str]:
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    sim_runner = await serve(sim)
    settings = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "accounts": [POLLED, IDLE],
            "traffic": {"delay_seconds": 60},
        },
        env={},
    )
    try:
        async with running(settings, clock) as started:
            for _ in range(MINUTES):
                clock.advance(60)
                await started.service.areas.traffic.poller.poll(POLLED)
            yield f"{started.url}/"
    finally:
        await sim_runner.cleanup()


@pytest.mark.parametrize(
    ("label", "width", "height", "mobile"),
    [("desktop", 1280, 900, False), ("phone", 390, 844, True)],
)
async def test_charts_are_drawn_and_the_page_fits(
    landing_url: str, tmp_path: Path, label: str, width: int, height: int, mobile: bool
) -> None:
    async with Chromium(chromium(), tmp_path / "profile") as page:
        await page.open(landing_url, width, height, mobile)
        seen: dict[str, Any] = await page.evaluate(READ_BACK)
        shot = tmp_path / f"landing-{label}.png"
        await page.screenshot(shot)
    assert page.errors == []  # no CSP violation, no script error
    assert seen["scripts"] == 0
    # Nothing runs off the right edge: no horizontal scrolling at either width (a phone
    # widens its layout viewport to wide content, so compare with the device width).
    assert seen["inner"] == width, seen
    assert seen["scroll"] <= width, seen
    assert seen["right"] <= width + 0.5, seen
    charts = seen["charts"]
    assert [c["name"] for c in charts] == ["requests", "bandwidth", "hit_ratio"]
    for c in charts:
        assert c["points"] == 60, c  # the last hour, one window a minute; older ones dropped
        assert c["lineWidth"] > 300, c  # the line spans the hour (320 units wide)
        assert c["lineHeight"] > 0 or c["name"] == "hit_ratio", c
        assert c["stroke"] not in ("", "none"), c
        assert c["height"] > 40, c
    if label == "desktop":  # side by side
        assert len({round(c["left"]) for c in charts}) == 3, charts
    else:  # stacked, each as wide as the column
        assert len({round(c["left"]) for c in charts}) == 1, charts
        assert all(c["width"] > width * 0.75 for c in charts), charts
    bars = seen["bars"]
    assert 1 <= len(bars) <= 10
    assert bars == sorted(bars, reverse=True)
    assert bars[0] > 0
    assert seen["idleCharts"] == 0
    assert seen["idle"].startswith("No traffic data yet")
    assert shot.stat().st_size > 20_000
    keep = os.environ.get("CDNVIDEO_KEEP_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, Path(keep) / shot.name)
