"""Debian's Prometheus as a remote-write receiver (``--web.enable-remote-write-receiver``,
``storage.tsdb.out_of_order_time_window: 6h``), the exporter writing each final minute to it,
the simulator delivering late data: every settled minute is stored once, at its own timestamp,
with the simulator's final figure, across a restart of the exporter in the middle; the billing
rule's true-time 95th percentile over them is the one computed from the simulator's figures.

Real time: a minute is final about two and a half minutes after it closed (read once it
closed, settled a minute later), so the test runs for several minutes.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_helpers import RULES, load_yaml, tool
from tests.system.system_stack import (
    SIM_TOKEN,
    STARTUP_SECONDS,
    Processes,
    free_port,
    http,
    promql_quantile,
    wait_for,
)

pytestmark = [pytest.mark.system, pytest.mark.realtime]

ACC = "demo-media"
FAMILY = "cdnvideo_minute_account_requests"
RESOURCE_FAMILY = "cdnvideo_minute_resource_requests"
LATE_SECONDS = 45  # the simulator's figures rise this long after a minute closes
MINUTES_SECONDS = 420.0  # generous: a minute is final about 150 s after it closed
TRUE_P95 = "account_side:cdnvideo_minute_account_transferred_bytes:rate5m_p95_month_to_date"


def exporter_config(sim: str, port: int, state: Path, receiver: str) -> dict[str, Any]:
    return {
        "upstream": {"base_url": sim, "token": SIM_TOKEN},
        "accounts": [ACC],
        # read at once when a minute closes, settle a minute later (past the late data)
        "traffic": {"delay_seconds": 0, "revisit_minutes": 1, "state_file": str(state)},
        "restream": {"enabled": False},
        "dvr": {"enabled": False},
        "talking_head": {"enabled": False},
        "listen": f"127.0.0.1:{port}",
        "log": {"level": "info", "format": "json"},
        "remote_write": {"url": receiver, "bearer_token": "remote-write-test-token"},
    }


def billing_p95() -> str:
    """The true-time recording rule of the billing group, as Prometheus evaluates it."""
    groups = load_yaml(RULES)["groups"]
    rules = [r for g in groups for r in g["rules"] if r.get("record") == TRUE_P95]
    assert len(rules) == 1
    return str(rules[0]["expr"])


def month(t: int) -> int:
    return time.gmtime(t).tm_mon


class Rig:
    def __init__(self, tmp: Path, procs: Processes) -> None:
        self.tmp, self.procs = tmp, procs
        self.sim = f"http://127.0.0.1:{free_port()}"
        self.prom = f"http://127.0.0.1:{free_port()}"
        self.port = free_port()
        self.exporter = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CDNVIDEO_")}
        self.config = tmp / "exporter.yml"
        self.config.write_text(
            yaml.safe_dump(
                exporter_config(
                    self.sim, self.port, tmp / "traffic.json", f"{self.prom}/api/v1/write"
                )
            ),
            encoding="utf-8",
        )

    def start_exporter(self, name: str) -> None:
        args = [sys.executable, "-m", "exporter", "run", "--config", str(self.config)]
        self.procs.start(name, args, self.env)
        wait_for(
            f"{name} /readyz",
            lambda: http("GET", f"{self.exporter}/readyz")[0] == 200,
            STARTUP_SECONDS,
            self.procs,
        )

    def last_minute(self) -> float | None:
        """The exporter's newest acknowledged minute of ACC (None: none yet)."""
        status, body, _ = http("GET", f"{self.exporter}/metrics")
        if status != 200:
            return None
        name = "cdnvideo_remote_write_last_minute_timestamp_seconds"
        for line in body.decode().splitlines():
            if line.startswith(f'{name}{{account="{ACC}"}}'):
                return float(line.rsplit(" ", 1)[1])
        return None

    def samples(self, selector: str) -> dict[str, list[tuple[float, str]]]:
        """Every stored sample of the last hour, by series (raw, as the TSDB holds them)."""
        query = urllib.parse.urlencode({"query": f"{selector}[1h]"})
        status, body, _ = http("GET", f"{self.prom}/api/v1/query?{query}")
        assert status == 200, body[:300]
        result = json.loads(body)["data"]["result"]
        return {json.dumps(r["metric"], sort_keys=True): r["values"] for r in result}

    def query(self, expr: str, when: int) -> dict[tuple[str, str], float]:
        """An instant query at ``when``: (account, side) -> value."""
        query = urllib.parse.urlencode({"query": expr, "time": str(when)})
        status, body, _ = http("GET", f"{self.prom}/api/v1/query?{query}")
        assert status == 200, body[:300]
        result = json.loads(body)["data"]["result"]
        return {(r["metric"]["account"], r["metric"]["side"]): float(r["value"][1]) for r in result}

    def truth(self, minute: int, resource: str | None = None) -> dict[str, float]:
        q = {"account": ACC, "minute": str(minute)} | ({"resource": resource} if resource else {})
        status, body, _ = http("GET", f"{self.sim}/_sim/traffic?{urllib.parse.urlencode(q)}")
        assert status == 200, body[:300]
        figures: dict[str, float] = json.loads(body)
        return figures


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    prometheus = tool("prometheus", "the Debian package prometheus")
    procs = Processes(tmp_path)
    try:
        r = Rig(tmp_path, procs)
        config = tmp_path / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "15s"},
                    "storage": {"tsdb": {"out_of_order_time_window": "6h"}},
                }
            ),
            encoding="utf-8",
        )
        procs.start(
            "prometheus",
            [
                prometheus,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'prometheus-data'}",
                f"--web.listen-address={r.prom.removeprefix('http://')}",
                "--web.enable-remote-write-receiver",
            ],
        )
        sim_args = [sys.executable, "-m", "exporter", "simulate", "--listen"]
        sim_args += [r.sim.removeprefix("http://"), "--late-seconds", str(LATE_SECONDS)]
        # the newer docs' platform: 1-minute windows only, so a catch-up after the restart
        # reads minute by minute as well (a longer window would be spread: docs/remote-write.md)
        sim_args += ["--max-window-minutes", "1"]
        procs.start("simulator", sim_args, r.env)
        wait_for("Prometheus /-/ready", lambda: http("GET", f"{r.prom}/-/ready")[0] == 200,
                 STARTUP_SECONDS, procs)  # fmt: skip
        wait_for("simulator", lambda: http("GET", f"{r.sim}/_sim/")[0] == 200,
                 STARTUP_SECONDS, procs)  # fmt: skip
        yield r
    finally:
        procs.stop()


def test_every_settled_minute_is_stored_once_at_its_own_time_across_a_restart(rig: Rig) -> None:
    rig.start_exporter("exporter")
    first = wait_for("a first minute written", rig.last_minute, MINUTES_SECONDS, rig.procs)
    wait_for(
        "a second minute written",
        lambda: (m := rig.last_minute()) is not None and m > first,
        MINUTES_SECONDS,
        rig.procs,
    )
    rig.procs.stop_one("exporter")  # SIGTERM: it saves its state and stops
    stopped = int(time.time() // 60) * 60
    rig.start_exporter("exporter-restarted")
    wait_for(
        "minutes after the restart written",
        lambda: (m := rig.last_minute()) is not None and m >= stopped + 120,
        MINUTES_SECONDS,
        rig.procs,
    )
    last = rig.last_minute()
    assert last is not None

    series = rig.samples(f'{FAMILY}{{account="{ACC}",side="edge"}}')
    assert len(series) == 1, series.keys()
    (values,) = series.values()
    stamps = [ts for ts, _ in values]
    assert len(stamps) == len(set(stamps))  # no minute twice
    minutes = list(range(int(stamps[0]), int(last) + 60, 60))
    assert stamps == minutes  # at each minute's start, none missing (across the restart)
    assert minutes[0] <= stopped - 60  # written before the restart
    assert minutes[-1] >= stopped + 120  # and after it
    for ts, value in values:
        assert float(value) == rig.truth(int(ts))["edge_requests_total"], ts

    resources = rig.samples(f'{RESOURCE_FAMILY}{{account="{ACC}",side="edge"}}')
    assert len(resources) == 5  # the simulator's default resources per account
    for key, values in resources.items():
        resource = json.loads(key)["resource"]
        assert [ts for ts, _ in values] == minutes
        for ts, value in values[-3:]:
            assert float(value) == rig.truth(int(ts), resource)["edge_requests_total"]

    # The billing dashboard's true-time 95th percentile (deploy/prometheus/rules.yml) over the
    # minutes written: the percentile of the 5-minute means of the simulator's final bytes.
    first_whole = -(-minutes[0] // 300) * 300  # the first interval of the clock written whole
    wait_for(
        "a whole 5-minute interval written",
        lambda: (m := rig.last_minute()) is not None and m >= first_whole + 240,
        MINUTES_SECONDS,
        rig.procs,
    )
    newest = rig.last_minute()
    assert newest is not None
    intervals = [
        t for t in range(first_whole, int(newest) - 240 + 1, 300) if month(t) == month(int(newest))
    ]
    assert intervals
    want = {}
    for side in ("edge", "origin"):
        means = [
            sum(rig.truth(t + 60 * k)[f"{side}_transferred_bytes"] for k in range(5)) / 300
            for t in intervals
        ]
        want[(ACC, side)] = pytest.approx(promql_quantile(0.95, means), rel=1e-12)
    assert rig.query(billing_p95(), int(newest) + 60) == want

    metrics = http("GET", f"{rig.exporter}/metrics")[1].decode()
    assert 'cdnvideo_remote_write_samples_total{outcome="rejected"} 0.0' in metrics
    assert 'cdnvideo_remote_write_samples_total{outcome="too_old"} 0.0' in metrics
    assert f'cdnvideo_remote_write_pending_minutes{{account="{ACC}"}} 0.0' in metrics
