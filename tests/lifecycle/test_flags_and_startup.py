"""Prometheus-style flags of run and check-config, and start-up errors as one line."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import yaml

from tests.web.admin.demo_proc import free_port

from .daemon import TOKEN, cli, get, simulator, started


def _write(path: Path, base_url: str = "http://127.0.0.1:9", **extra: object) -> Path:
    conf = {"upstream": {"base_url": base_url, "token": TOKEN}, "accounts": ["demo-media"]}
    path.write_text(yaml.safe_dump({**conf, "listen": "127.0.0.1:9", **extra}))
    return path


def test_flags_override_the_file_and_check_config_shows_the_result(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.yml", log={"level": "debug", "format": "json"})
    done = cli(
        "check-config",
        "--config.file",
        str(path),
        "--web.listen-address",
        "127.0.0.1:9999",
        "--log.level",
        "warn",
        "--log.format",
        "logfmt",
        "--web.telemetry-path",
        "/probe",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    shown = yaml.safe_load(done.stdout)
    assert shown["listen"] == "127.0.0.1:9999"
    assert shown["log"] == {"level": "warn", "format": "logfmt"}
    assert "# set by flags: listen, log.level, log.format\n" in done.stdout
    assert "# metrics path: /probe\n" in done.stdout
    bad = cli("check-config", "--config.file", str(path), "--log.level", "loud", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--log.level: invalid choice: 'loud'" in bad.stderr


def test_run_serves_the_telemetry_path_on_the_flag_address_in_logfmt(tmp_path: Path) -> None:
    port = free_port()
    with simulator(tmp_path) as sim:
        path = _write(tmp_path / "c.yml", sim, log={"format": "json"})
        flags = [
            "run",
            "--config.file",
            str(path),
            "--web.listen-address",
            f"127.0.0.1:{port}",
            "--web.telemetry-path",
            "/probe",
            "--log.format",
            "logfmt",
        ]
        with started(flags, tmp_path, "exporter") as exp:
            text = exp.wait_for("msg=exporter_started")
            status, body = get(f"http://127.0.0.1:{port}/probe")
            assert status == 200
            assert "cdnvideo_exporter_build_info{" in body
            assert get(f"http://127.0.0.1:{port}/metrics")[0] == 404
    line = next(x for x in text.splitlines() if "msg=exporter_started" in x)
    assert re.match(r"ts=\S+Z level=info msg=exporter_started caller=daemon\.py:\d+ ", line), line
    assert f"listen=127.0.0.1:{port}" in line
    assert "accounts=demo-media " in line  # a list, comma-joined (one account here)


def test_log_level_warn_from_the_flag_hides_info_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.yml", listen=f"127.0.0.1:{free_port()}")
    flags = ["run", "--config.file", str(path), "--log.level", "warn", "--log.format", "json"]
    with started(flags, tmp_path, "exporter") as exp:
        exp.wait_for('"msg": "poll_failed"')  # nothing listens on port 9: a warning
        lines = [json.loads(x) for x in exp.text().splitlines() if x.startswith("{")]
    assert lines
    assert {x["level"] for x in lines} <= {"warn", "error"}


def _one_line_failure(done: subprocess.CompletedProcess[str], cause: str) -> None:
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert cause in done.stderr
    assert "started" not in done.stderr


def test_a_taken_port_is_one_line_and_nothing_says_started(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = _write(tmp_path / "c.yml", listen=f"127.0.0.1:{port}")
        done = cli("run", "--config.file", str(path), cwd=tmp_path)
    _one_line_failure(done, f"error: listen 127.0.0.1:{port}: Address already in use")


def test_an_unreadable_config_or_a_missing_certificate_is_one_line(tmp_path: Path) -> None:
    done = cli("run", "--config.file", str(tmp_path / "nope.yml"), cwd=tmp_path)
    _one_line_failure(done, "config error: config file")
    assert "No such file or directory" in done.stderr
    web = tmp_path / "web.yml"
    web.write_text("tls_server_config: {cert_file: gone.crt, key_file: gone.key}\n")
    path = _write(tmp_path / "c.yml", listen=f"127.0.0.1:{free_port()}")
    done = cli("run", "--config.file", str(path), "--web.config.file", str(web), cwd=tmp_path)
    _one_line_failure(done, "tls_server_config.cert_file: cannot read")
