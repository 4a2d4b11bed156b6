"""The flags of ``run``, also taken by ``check-config``; ``--collector.<area>`` and
``--no-collector.<area>`` switch an area over the file's ``enabled`` (issue 51, points 2, 3)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import yaml

from exporter.cli import main
from exporter.config import ConfigError, parse_config
from exporter.config.flags import Flags, load_settings
from exporter.runtime.registry import area_names, settings_sections
from exporter.runtime.reload import Reloader
from exporter.traffic.settings import TRAFFIC_SECTION

AREAS = ("traffic", "restream", "dvr", "talking_head")


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def options(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][\w.-]*)", help_text))


def write(path: Path, **extra: object) -> Path:
    conf = {"upstream": {"base_url": "http://127.0.0.1:9", "token": "t-0123456789"}}
    path.write_text(yaml.safe_dump({**conf, "accounts": ["acme"], **extra}))
    return path


def test_check_config_takes_every_flag_of_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    run, check = options(help_of("run", capsys)), options(help_of("check-config", capsys))
    assert "--web.enable-lifecycle" in run
    assert run - check == set()
    assert check - run == {"--verbose"}


def test_run_help_lists_a_collector_flag_pair_per_area(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert area_names() == AREAS
    run = options(help_of("run", capsys))
    for area in AREAS:
        assert {f"--collector.{area}", f"--no-collector.{area}"} <= run


def test_check_config_accepts_the_lifecycle_flag_and_shows_switched_areas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "c.yml", dvr={"enabled": True}, talking_head={"enabled": False})
    code = main(
        [
            "check-config",
            "--config.file",
            str(path),
            "--web.enable-lifecycle",
            "--no-collector.dvr",
            "--collector.talking_head",
            "--collector.restream",
            "--no-collector.restream",  # the last one given wins
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    shown = yaml.safe_load(out)
    assert (shown["dvr"]["enabled"], shown["talking_head"]["enabled"]) == (False, True)
    assert (shown["restream"]["enabled"], shown["traffic"]["enabled"]) == (False, True)
    assert "# set by flags: restream.enabled, dvr.enabled, talking_head.enabled\n" in out


def test_a_switched_area_is_checked_by_the_rules_as_if_the_file_said_so(tmp_path: Path) -> None:
    # traffic off in the file: its request budget rule has nothing to check ...
    path = write(
        tmp_path / "c.yml",
        upstream={
            "base_url": "http://127.0.0.1:9",
            "token": "t-0123456789",
            "max_requests_per_minute": 1,
        },
        traffic={"enabled": False},
    )
    assert not TRAFFIC_SECTION.of(load_settings(Flags(str(path)), settings_sections())).enabled
    # ... switched on by the flag, the budget is too small for it
    with pytest.raises(ConfigError, match="max_requests_per_minute: 1 is below"):
        load_settings(Flags(str(path), collectors=(("traffic", True),)), settings_sections())


def test_an_unknown_area_is_named() -> None:
    with pytest.raises(ConfigError, match=r"--collector\.audio: no such area \(areas: traffic"):
        parse_config({}, env={}, switched={"audio": True})


def test_a_reload_applies_the_flags_again_over_the_new_file(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yml", dvr={"enabled": True, "interval_seconds": 60})
    flags = Flags(str(path), collectors=(("dvr", False),))
    running = load_settings(flags, settings_sections())
    assert running.areas["dvr"].enabled is False
    applied: list[object] = []

    async def rendered() -> None:
        return None

    reloader = Reloader(
        lambda: load_settings(flags, settings_sections()),
        lambda: running,
        applied.append,
        lambda ok: None,
        rendered,
    )
    write(path, dvr={"enabled": True, "interval_seconds": 30})  # the file still says on
    outcome = asyncio.run(reloader.reload())
    assert outcome.ok
    assert outcome.applied == ("dvr.interval_seconds",)
    assert outcome.needs_restart == ()  # dvr.enabled stays as the flag said: nothing to restart
    (effective,) = applied
    assert effective.areas["dvr"].enabled is False  # type: ignore[attr-defined]
