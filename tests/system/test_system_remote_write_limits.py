"""The limit docs/remote-write.md states for a Prometheus without the out-of-order window:
a minute older than the newest of its series is refused, and the writer drops it as too old
(counted, never retried) while the rest is stored. The writer runs in-process here."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from exporter.remotewrite.build import build_writer
from exporter.remotewrite.settings import RemoteWriteSettings
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from tests.deploy.deploy_helpers import tool
from tests.system.system_stack import STARTUP_SECONDS, Processes, free_port, http, wait_for

pytestmark = [pytest.mark.system, pytest.mark.realtime]


@pytest.fixture
async def prometheus(tmp_path: Path) -> AsyncIterator[str]:
    binary = tool("prometheus", "the Debian package prometheus")
    procs = Processes(tmp_path)
    url = f"http://127.0.0.1:{free_port()}"
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": "15s"}}), encoding="utf-8")
    try:
        procs.start(
            "prometheus",
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address={url.removeprefix('http://')}",
                "--web.enable-remote-write-receiver",
            ],
        )
        wait_for("Prometheus ready", lambda: http("GET", f"{url}/-/ready")[0] == 200,
                 STARTUP_SECONDS, procs)  # fmt: skip
        yield url
    finally:
        procs.stop()


async def test_without_the_out_of_order_window_an_older_minute_is_dropped(
    prometheus: str,
) -> None:
    now = time.time()
    newest = int(now // 60) * 60 - 120
    clock = FakeClock(now)
    metrics = SelfMetrics()
    settings = RemoteWriteSettings(url=f"{prometheus}/api/v1/write")
    async with aiohttp.ClientSession() as session:
        writer = build_writer(settings, "", session, clock, metrics, lambda name: True)
        writer.final("acme", newest, newest + 60, {"edge_requests_total": 7.0}, {})
        await writer.flush()
        writer.final("acme", newest - 60, newest, {"edge_requests_total": 5.0}, {})
        await writer.flush()

    def sample(outcome: str) -> float | None:
        labels = {"outcome": outcome}
        return metrics.registry.get_sample_value("cdnvideo_remote_write_samples_total", labels)

    assert sample("sent") == 1
    assert sample("too_old") == 1  # Prometheus: 400 "out of order sample"; never retried
    assert sample("retried") == 0
    query = urllib.parse.urlencode({"query": "cdnvideo_minute_account_requests[1h]"})
    status, body, _ = http("GET", f"{prometheus}/api/v1/query?{query}")
    assert status == 200
    (series,) = json.loads(body)["data"]["result"]
    assert series["values"] == [[newest, "7"]]
