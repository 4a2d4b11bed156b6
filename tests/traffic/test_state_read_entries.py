"""The state file is read entry by entry: a bad value costs its account, series or unsettled
run alone (negative counts, a negative stage or slow_cap among them); the rest is restored,
and the rejection is a self-metric and one log line."""

from __future__ import annotations

import json
from pathlib import Path

from exporter.simulator import SimConfig
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_against_simulator import ACC, ServerFactory, rig

OTHER = "demo-shop"


async def test_a_bad_entry_costs_that_entry_alone(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    path = tmp_path / "traffic.json"
    config = SimConfig(late_seconds=200, resources_per_account=3)
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=str(path), revisit_minutes=[5, 15])
        for _ in range(40):  # 10 minutes of both accounts
            await poller.poll(ACC)
            await poller.poll(OTHER)
            r.clock.advance(15)
        before = {a: poller.accounts.ledger(a) for a in (ACC, OTHER)}
        doc = json.loads(path.read_bytes())
        acc = doc["accounts"][ACC]
        bad_series, good_series = sorted(acc["series"])[:2]
        acc["series"][bad_series][2][0] = -1  # one negative count in one series
        assert len(acc["pending"]) >= 2
        acc["pending"][0]["settled"] = -1  # a negative age: that run alone
        doc["accounts"][OTHER]["slow_cap"] = -2  # the account's own field: that account
        path.write_text(json.dumps(doc))

        with capture_logs() as logs:
            restarted = r.poller(state_file=str(path), revisit_minutes=[5, 15])
        rejected = r.metrics.registry.get_sample_value("cdnvideo_state_entries_rejected_total")
        assert rejected == 3
        lines = [e for e in logs if e["event"] == "traffic_state_entries_rejected"]
        assert len(lines) == 1
        assert lines[0]["entries"] == 3
        assert f"accounts.{ACC}.series.{bad_series}" in lines[0]["problem"]

        led = restarted.accounts.get(ACC)
        assert led is not None
        got = led.ledger
        assert got.cursor == before[ACC].cursor
        assert list(got.totals) == list(before[ACC].totals)
        assert bad_series not in got.series
        assert list(got.series[good_series].values) == list(before[ACC].series[good_series].values)
        assert [run.start for run in got.pending] == [run.start for run in before[ACC].pending[1:]]
        assert restarted.accounts.get(OTHER) is None  # its own field was bad: it starts afresh
