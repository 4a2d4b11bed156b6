"""Reload (SIGHUP and POST /-/reload) on a real daemon process against the real simulator."""

from __future__ import annotations

import signal
from pathlib import Path

import yaml

from exporter.web.lifecycle import LIFECYCLE_OFF
from tests.web.admin.demo_proc import free_port

from .daemon import TOKEN, get, sample, simulator, started, wait_until

WRITE = "write-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"
RESTREAM_OK = 'cdnvideo_upstream_requests_total{area="restream",code="200"}'


def _config(base_url: str, port: int, accounts: list[str], **extra: object) -> str:
    conf: dict[str, object] = {
        "upstream": {"base_url": base_url, "token": TOKEN},
        "accounts": accounts,
        "listen": f"127.0.0.1:{port}",
        "traffic": {"enabled": False},
        "dvr": {"enabled": False},
        "talking_head": {"enabled": False},
        "restream": {"interval_seconds": 0.5, "history_interval_seconds": 0.5},
        "log": {"format": "json"},
        **extra,
    }
    return yaml.safe_dump(conf)


def _metrics(port: int) -> str:
    status, text = get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200
    return text


def test_sighup_applies_accounts_and_selection_and_keeps_counters(tmp_path: Path) -> None:
    port = free_port()
    path = tmp_path / "config.yml"
    with simulator(tmp_path) as sim:
        path.write_text(_config(sim, port, ["demo-media"]))
        with started(["run", "--config.file", str(path)], tmp_path, "exporter") as exp:
            exp.wait_for("exporter_started")
            wait_until(lambda: (sample(_metrics(port), RESTREAM_OK) or 0) >= 4)
            before = sample(_metrics(port), RESTREAM_OK) or 0
            media_up = 'cdnvideo_up{account="demo-media",area="restream"}'
            shop_up = 'cdnvideo_up{account="demo-shop",area="restream"}'
            assert sample(_metrics(port), media_up) == 1.0

            path.write_text(
                _config(
                    sim,
                    port,
                    ["demo-shop"],
                    metrics={"exclude": ["^cdnvideo_restream_resource_info$"]},
                )
            )
            exp.proc.send_signal(signal.SIGHUP)
            exp.wait_for("config_reloaded")
            wait_until(lambda: sample(_metrics(port), shop_up) == 1.0)

            text = _metrics(port)
            assert exp.proc.poll() is None  # SIGHUP no longer ends the process
            assert (sample(text, RESTREAM_OK) or 0) >= before  # the counter went on
            assert sample(text, media_up) is None  # the removed account is forgotten
            wait_until(lambda: "cdnvideo_restream_resource_info{" not in _metrics(port))
            assert sample(text, "cdnvideo_exporter_config_last_reload_successful") == 1.0
            assert "needs_restart" in exp.text()


def test_bad_config_keeps_the_running_one_and_reports_it(tmp_path: Path) -> None:
    port = free_port()
    path = tmp_path / "config.yml"
    flags = ["run", "--config.file", str(path), "--web.enable-lifecycle"]
    with simulator(tmp_path) as sim:
        good = _config(sim, port, ["demo-media"])
        path.write_text(good)
        with started(flags, tmp_path, "exporter") as exp:
            exp.wait_for("exporter_started")
            stamp = "cdnvideo_exporter_config_last_reload_success_timestamp_seconds"
            first = sample(_metrics(port), stamp)
            assert first is not None
            assert first > 1.7e9

            path.write_text(good.replace("interval_seconds: 0.5", "interval_seconds: -1", 1))
            status, body = get(f"http://127.0.0.1:{port}/-/reload", "POST")
            assert status == 500
            assert "restream.history_interval_seconds: must be greater than 0" in body
            assert "config_reload_failed" in exp.text()
            text = _metrics(port)
            assert sample(text, "cdnvideo_exporter_config_last_reload_successful") == 0.0
            assert sample(text, stamp) == first
            wait_until(  # still polling the running config's account
                lambda: (
                    sample(_metrics(port), 'cdnvideo_up{account="demo-media",area="restream"}')
                    == 1.0
                )
            )

            path.write_text(good)
            status, body = get(f"http://127.0.0.1:{port}/-/reload", "POST")
            assert (status, body) == (200, "config reloaded: applied: nothing changed\n")
            text = _metrics(port)
            assert sample(text, "cdnvideo_exporter_config_last_reload_successful") == 1.0
            assert (sample(text, stamp) or 0) > first


def test_reload_route_is_off_without_the_flag_and_takes_the_write_token(tmp_path: Path) -> None:
    port = free_port()
    path = tmp_path / "config.yml"
    admin = {"enabled": True, "read_token": READ, "write_token": WRITE}
    with simulator(tmp_path) as sim:
        path.write_text(_config(sim, port, ["demo-media"], admin=admin))
        with started(["run", "--config", str(path)], tmp_path, "plain") as exp:
            exp.wait_for("exporter_started")
            off = get(f"http://127.0.0.1:{port}/-/reload", "POST")
            assert off == (403, LIFECYCLE_OFF)
        flags = ["run", "--config.file", str(path), "--web.enable-lifecycle"]
        with started(flags, tmp_path, "lifecycle") as exp:
            exp.wait_for("exporter_started")
            url = f"http://127.0.0.1:{port}/-/reload"
            assert get(url, "POST")[0] == 401
            assert get(url, "POST", {"Authorization": f"Bearer {READ}"})[0] == 403
            assert get(url, "POST", {"Authorization": f"Bearer {WRITE}"})[0] == 200
            assert get(url)[0] == 405
