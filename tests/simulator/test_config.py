"""SimConfig from YAML and from command-line flags; the default data set."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from exporter.simulator import (
    SimConfig,
    Simulator,
    add_cli_arguments,
    config_from_args,
    parse_listen,
)
from exporter.support.clock import FakeClock


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", default="127.0.0.1:8080")
    add_cli_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_are_the_documented_demo() -> None:
    config = config_from_args(parse())
    assert config == SimConfig()
    assert config.accounts == ("demo-media", "demo-shop")
    assert config.token == "demo-token"
    assert (config.username, config.password) == ("demo", "demo")
    assert config.request_time_format == "flat"
    assert config.max_window_minutes == 10


def test_flags_override_yaml(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(
        "resources_per_account: 1000\nlate_seconds: 30\naccounts: 3\n"
        "dvr_hosts: [a, b]\nrequest_time_format: nested\n",
        encoding="utf-8",
    )
    config = config_from_args(
        parse("--sim-config", str(path), "--late-seconds", "10", "--token", "t", "--seed", "7")
    )
    assert config.resources_per_account == 1000
    assert config.late_seconds == 10
    assert config.accounts == ("demo-media", "demo-shop", "demo-03")
    assert config.dvr_hosts == ("a", "b")
    assert config.request_time_format == "nested"
    assert (config.token, config.seed) == ("t", 7)


def test_accounts_flag_takes_names_or_a_count() -> None:
    assert config_from_args(parse("--accounts", "a,b")).accounts == ("a", "b")
    assert len(config_from_args(parse("--accounts", "5")).accounts) == 5


def test_yaml_with_unknown_option_names_it(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text("resources: 5\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown simulator option"):
        SimConfig.from_yaml(path)


def test_yaml_may_nest_under_simulator(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text("simulator:\n  max_window_minutes: 1\n", encoding="utf-8")
    assert SimConfig.from_yaml(path).max_window_minutes == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"accounts": ()},
        {"request_time_format": "xml"},
        {"max_window_minutes": 0},
        {"late_seconds": -1},
        {"accounts": ("a", "a")},
    ],
)
def test_bad_options_are_rejected(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        SimConfig(**changes)  # type: ignore[arg-type]


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen(":9") == ("0.0.0.0", 9)
    assert parse_listen("[::1]:0") == ("::1", 0)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_listen("localhost")


def test_default_data_set_names() -> None:
    sim = Simulator(SimConfig(), FakeClock())
    assert [r.id for r in sim.resources("demo-media")] == [
        "100001",
        "100002",
        "100003",
        "100004",
        "100005",
    ]
    assert sim.resources("demo-shop")[0].cname == "www.demo-shop.cdn.example"
    assert list(sim.restream.resources["demo-shop"]) == ["2001", "2002", "2003", "2004"]
    assert list(sim.dvr.streams["demo-media"]) == ["live/main", "news"]
    assert sim.dvr.streams["demo-shop"]["news"].hosts == ("dvr-msk-1", "dvr-spb-1")
