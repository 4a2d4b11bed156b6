"""``cdnvideo-exporter audit``: a day's settled windows re-read from the simulator, counted vs
platform per family, exit 1 when they differ."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from exporter.config import Settings, parse_config
from exporter.runtime.registry import settings_sections
from exporter.simulator import SimConfig
from exporter.traffic.audit import AuditBook
from exporter.traffic.parse import COUNT_KEYS
from exporter.traffic.prove import compare_day, day_windows, load_book, prove_day
from exporter.traffic.reply import MetricsEndpoint
from tests.traffic.test_against_simulator import ACC, ServerFactory, rig
from tests.traffic.test_audit import audited_poller

DAY = datetime.fromtimestamp(1_767_225_600, UTC).date()  # 2026-01-01, the rig's day


def settings_for(base_url: str, token: str, state_file: str) -> Settings:
    raw = {
        "upstream": {"base_url": base_url, "token": token},
        "accounts": [{"name": ACC}],
        "traffic": {"state_file": state_file},
    }
    return parse_config(raw, env={}, areas=settings_sections())


async def counted_for_40_minutes(r, state_file: str) -> AuditBook:  # type: ignore[no-untyped-def]
    poller, auditor = audited_poller(r, state_file)
    for _ in range(4 * 40):
        await poller.poll(ACC)
        r.clock.advance(15)
    auditor.save(force=True)
    return auditor.book


async def test_a_day_counted_exactly_proves_equal(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, SimConfig(late_seconds=240, resources_per_account=3)) as r:
        await counted_for_40_minutes(r, state_file)
        settings = settings_for(r.url, r.sim.token, state_file)
        err = io.StringIO()
        book = load_book(settings, err)
        assert book is not None
        windows = day_windows(book, ACC, DAY)
        assert sum(c.minutes for c in windows) >= 25  # settled windows of the 40 minutes
        out = io.StringIO()
        status = await prove_day(settings, book, ACC, DAY, out, err, r.clock)
        assert status == 0, out.getvalue() + err.getvalue()
        lines = out.getvalue().splitlines()
        assert lines[-1].endswith("minutes: equal")
        requests = next(line for line in lines if line.startswith("edge_requests_total "))
        counted, platform, diff = requests.split()[1:]
        assert counted == platform
        assert float(counted) > 0
        assert diff == "+0"
        assert len(lines) == 1 + len(COUNT_KEYS) + 1
        progress = err.getvalue().splitlines()
        assert progress[-1].startswith(f"[{len(windows)}/{len(windows)}] ")


async def test_a_minute_revised_after_settling_makes_the_day_differ(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    config = SimConfig(
        late_seconds=240, resources_per_account=3, quirks=frozenset({"revise-after-settle"})
    )
    async with rig(aiohttp_server, config) as r:
        book = await counted_for_40_minutes(r, state_file)
        windows = day_windows(book, ACC, DAY)
        revised = sum(1 for c in windows for m in range(c.start, c.end, 60) if m // 60 % 60 == 7)
        assert revised == 1  # 17:07 of the rig's 40 minutes
        r.clock.advance(3600)  # past the revision (30 minutes after the minute closed)
        counted, platform = await compare_day(
            MetricsEndpoint(r.client), ACC, windows, io.StringIO()
        )
        for i, key in enumerate(COUNT_KEYS):
            late = key in ("edge_requests_total", "edge_status_200", "edge_status_2xx")
            assert platform[i] - counted[i] == (1 if late else 0), key
        settings = settings_for(r.url, r.sim.token, state_file)
        out = io.StringIO()
        status = await prove_day(settings, book, ACC, DAY, out, io.StringIO(), r.clock)
        assert status == 1
        assert out.getvalue().splitlines()[-1].endswith("minutes: differs in 3 families")


async def test_a_day_without_record_is_said_and_exits_2(tmp_path: Path) -> None:
    settings = settings_for("http://127.0.0.1:9", "t", str(tmp_path / "traffic.json"))
    err = io.StringIO()
    assert load_book(settings, err) is None
    assert "does not exist" in err.getvalue()
    status = await prove_day(settings, AuditBook(), ACC, DAY, io.StringIO(), err)
    assert status == 2
    assert "holds no settled window of demo-media on 2026-01-01" in err.getvalue()


async def test_an_account_the_config_does_not_name_is_called_unknown(tmp_path: Path) -> None:
    settings = settings_for("http://127.0.0.1:9", "t", str(tmp_path / "traffic.json"))
    err = io.StringIO()
    status = await prove_day(settings, AuditBook(), "nosuch", DAY, io.StringIO(), err)
    assert status == 2
    assert err.getvalue() == (
        "error: unknown account 'nosuch': the config's accounts are demo-media\n"
    )


async def test_with_discovery_an_account_the_record_lacks_is_called_unknown(
    tmp_path: Path,
) -> None:
    raw = {
        "upstream": {"base_url": "http://127.0.0.1:9", "token": "t"},
        "traffic": {"state_file": str(tmp_path / "traffic.json")},
    }
    settings = parse_config(raw, env={}, areas=settings_sections())
    err = io.StringIO()
    status = await prove_day(settings, AuditBook(), "nosuch", DAY, io.StringIO(), err)
    assert status == 2
    assert err.getvalue() == (
        "error: unknown account 'nosuch': the config discovers its accounts and the audit "
        "record holds none\n"
    )


def test_the_command_line_names_what_is_missing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from exporter.cli import main

    config = tmp_path / "exporter.yml"
    config.write_text(
        "upstream: {base_url: 'http://127.0.0.1:9', token: t}\n"
        f"traffic: {{state_file: '{tmp_path / 'traffic.json'}'}}\n",
        encoding="utf-8",
    )
    argv = ["audit", "--config.file", str(config), "--account", ACC, "--day", "2026-01-01"]
    assert main(argv) == 2
    assert f"{tmp_path / 'traffic.json'}.audit.json does not exist" in capsys.readouterr().err
