"""check-config's upstream requests a minute by area, against what the daemon sends the
simulator (the same count bench.requests makes, on a fake clock: not timed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.requests import measure
from exporter.cli import main
from exporter.config import parse_config
from exporter.runtime.cost import request_cost

UPSTREAM = {"base_url": "http://127.0.0.1:1", "token": "t0ken-not-shown"}


def settings(streams: int, accounts: int = 1) -> object:
    return parse_config(
        {
            "upstream": UPSTREAM,
            "accounts": [
                {"name": f"acct-{a}", "dvr_streams": [f"live/s{i}" for i in range(streams)]}
                for a in range(accounts)
            ],
        },
        env={},
    )


async def test_the_estimate_is_what_the_daemon_sends() -> None:
    # 40 CDN resources: 8 restream resources and 4 DVR streams, every interval at its default
    measured = (await measure(40, minutes=20, warmup_minutes=6)).per_minute
    cost = {c.area: c for c in request_cost(settings(4))}  # type: ignore[arg-type]
    assert cost["traffic"].fixed == measured["traffic"] == 2.4
    assert cost["dvr"].fixed == measured["dvr"] == 4.0
    restream = cost["restream"].fixed + 8 * cost["restream"].per_resource  # 4 + 8/60
    assert restream == pytest.approx(4 + 8 / 60)
    # and one request more per status change the history poll follows
    assert restream <= measured["restream"] <= restream + 0.5
    assert cost["talking_head"].fixed == pytest.approx(60 / 21600)


async def test_dvr_poll_slices_cut_what_the_daemon_sends_as_estimated() -> None:
    # 40 CDN resources: 4 DVR streams read in 4 slices, one per 60 s poll: 1 a minute
    m = await measure(40, minutes=12, warmup_minutes=2, dvr_slices=4)
    conf = parse_config(
        {
            "upstream": UPSTREAM,
            "accounts": [{"name": "a", "dvr_streams": [f"live/s{i}" for i in range(4)]}],
            "dvr": {"poll_slices": 4},
        },
        env={},
    )
    cost = {c.area: c for c in request_cost(conf)}
    assert cost["dvr"].fixed == m.per_minute["dvr"] == 1.0
    assert "4 stream(s) every 240 s (4 slices)" in cost["dvr"].how
    # every stream's last reply is kept while the others are read: the area stays up
    assert m.up["dvr"] == 1.0


def test_the_cost_scales_with_accounts_and_streams() -> None:
    one = {c.area: c.fixed for c in request_cost(settings(10))}  # type: ignore[arg-type]
    three = {c.area: c.fixed for c in request_cost(settings(10, 3))}  # type: ignore[arg-type]
    assert three["traffic"] == pytest.approx(3 * one["traffic"])
    assert three["restream"] == pytest.approx(3 * one["restream"])
    assert one["dvr"] == 10.0
    assert three["dvr"] == 30.0


def test_check_config_prints_the_cost_by_area(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yml"
    raw = {
        "upstream": UPSTREAM,
        "accounts": [{"name": "shop", "dvr_streams": ["live/a", "live/b"]}],
        "restream": {"interval_seconds": 60},
        "talking_head": {"enabled": False},
    }
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert main(["check-config", "--config", str(path)]) == 0
    printed = capsys.readouterr()
    out = printed.out.splitlines()
    start = out.index(
        "# upstream requests a minute for 1 account(s), by area (docs/performance.md):"
    )
    table = {line.split()[1]: line.split()[2] for line in out[start + 1 :]}
    assert table == {"traffic": "2.40", "restream": "2.00", "dvr": "2.00", "total": "6.40"}
    assert "+ 0.017 per restream resource" in out[start + 2]
    # comments: the output is still the effective config in YAML
    assert yaml.safe_load(printed.out)["dvr"]["enabled"] is True
    assert "t0ken-not-shown" not in printed.out + printed.err
