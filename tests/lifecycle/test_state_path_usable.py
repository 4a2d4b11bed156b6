"""A state file the exporter cannot write is an error before it counts: check-config exits 1
and ``run`` exits 1 naming the path; missing directories it can make, ``run`` makes."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.web.admin.demo_proc import free_port

from .daemon import TOKEN, cli, started

UNMAKEABLE = "/proc/cdnvideo-exporter/state.json"  # /proc takes no new directory, even as root


def _config(path: Path, state_file: str, **extra: object) -> Path:
    conf = {
        "upstream": {"base_url": "http://127.0.0.1:9", "token": TOKEN},
        "accounts": ["demo-media"],
        "listen": f"127.0.0.1:{free_port()}",
        "traffic": {"state_file": state_file},
        **extra,
    }
    path.write_text(yaml.safe_dump(conf))
    return path


def test_check_config_and_run_refuse_a_state_file_that_cannot_be_written(tmp_path: Path) -> None:
    config = _config(tmp_path / "c.yml", UNMAKEABLE)
    expected = (
        f"config error: traffic.state_file: {UNMAKEABLE} cannot be written "
        "(cannot create /proc/cdnvideo-exporter: No such file or directory)"
    )
    for command in ("check-config", "run"):
        done = cli(command, "--config.file", str(config), cwd=tmp_path)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert done.stdout == ""
        assert done.stderr.splitlines()[0] == expected
        assert "exporter_started" not in done.stderr


def test_a_state_path_under_a_file_and_an_admin_state_file_are_named(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("not a directory")
    config = _config(
        tmp_path / "c.yml",
        str(tmp_path / "plain" / "state.json"),
        admin={
            "enabled": True,
            "read_token": "r" * 16,
            "write_token": "w" * 16,
            "state_file": "/proc/cdnvideo-exporter/admin.json",
        },
    )
    done = cli("check-config", "--config.file", str(config), cwd=tmp_path)
    assert done.returncode == 1
    plain = tmp_path / "plain"
    assert done.stderr.splitlines() == [
        f"config error: traffic.state_file: {plain}/state.json cannot be written "
        f"({plain} is not a directory)",
        f"config error: traffic.state_file: {plain}/state.json.charts.json cannot be written "
        f"({plain} is not a directory)",
        "config error: admin.state_file: /proc/cdnvideo-exporter/admin.json cannot be written "
        "(cannot create /proc/cdnvideo-exporter: No such file or directory)",
    ]


def test_run_makes_the_missing_directories_and_check_config_does_not(tmp_path: Path) -> None:
    state = tmp_path / "var" / "lib" / "cdnvideo" / "state.json"
    config = _config(tmp_path / "c.yml", str(state))
    checked = cli("check-config", "--config.file", str(config), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert not (tmp_path / "var").exists()
    with started(["run", "--config.file", str(config)], tmp_path, "exporter") as exp:
        exp.wait_for("exporter_started")
        assert state.parent.is_dir()
        assert (state.parent.stat().st_mode & 0o777) == 0o750
        assert list(state.parent.iterdir()) == []  # the probe file is gone again


def test_a_state_file_name_too_long_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    long = str(tmp_path / ("1" + "0" * 300))  # one component over NAME_MAX (255)
    config = _config(tmp_path / "c.yml", long)
    done = cli("check-config", "--config.file", str(config), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[0] == (
        f"config error: traffic.state_file: {long} cannot be written ({long}: File name too long)"
    )
