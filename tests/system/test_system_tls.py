"""A real Prometheus scrapes the exporter over HTTPS with basic auth (web config file).

A second job with a wrong password must get 401, and plain HTTP to the TLS port must fail.
The certificates are made for the test (a CA, a server certificate for 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml

from tests.deploy.deploy_helpers import REPO, tool
from tests.system.system_stack import (
    SIM_TOKEN,
    STARTUP_SECONDS,
    NotYet,
    Processes,
    free_port,
    http,
    start_prometheus,
    wait_for,
)

sys.path.insert(0, str(REPO / "tests"))
from tests.web.tls_certs import Certs, make_certs

pytestmark = pytest.mark.system

USER, PASSWORD = "prometheus", "scrape-over-tls-password"
GOOD, WRONG = "cdnvideo-tls", "cdnvideo-tls-wrong-password"


def _prometheus(certs: Certs, target: str, password_file: Path) -> dict[str, Any]:
    def job(name: str, password: str) -> dict[str, Any]:
        return {
            "job_name": name,
            "scheme": "https",
            "tls_config": {"ca_file": str(certs.ca), "server_name": "127.0.0.1"},
            "basic_auth": {"username": USER, "password": password},
            "static_configs": [{"targets": [target]}],
        }

    good = job(GOOD, "")
    del good["basic_auth"]["password"]
    good["basic_auth"]["password_file"] = str(password_file)
    return {
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [good, job(WRONG, "not-the-password")],
    }


class TlsStack:
    def __init__(self, exporter: str, prom: str, ca: Path) -> None:
        self.exporter, self.prom, self.ca = exporter, prom, ca

    def targets(self) -> dict[str, dict[str, Any]]:
        status, body, _ = http("GET", f"{self.prom}/api/v1/targets")
        assert status == 200, body[:300]
        return {t["labels"]["job"]: t for t in json.loads(body)["data"]["activeTargets"]}


@pytest.fixture(scope="module")
def tls_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsStack]:
    prometheus = tool("prometheus", "the Debian package prometheus")
    tmp = tmp_path_factory.mktemp("tls")
    certs = make_certs(tmp / "certs")
    sim_port, port, prom_port = free_port(), free_port(), free_port()
    web = tmp / "web.yml"
    web.write_text(
        yaml.safe_dump(
            {
                "tls_server_config": {
                    "cert_file": "certs/server.crt",
                    "key_file": "certs/server.key",
                },
                "basic_auth_users": {
                    USER: bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()
                },
            }
        ),
        encoding="utf-8",
    )
    config = tmp / "exporter.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "upstream": {"base_url": f"http://127.0.0.1:{sim_port}", "token": SIM_TOKEN},
                "accounts": ["demo-media"],
                "listen": f"127.0.0.1:{port}",
                "log": {"format": "json"},
            }
        ),
        encoding="utf-8",
    )
    password_file = tmp / "password"
    password_file.write_text(PASSWORD, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDNVIDEO_")}
    procs = Processes(tmp)
    try:
        prom_config = _prometheus(certs, f"127.0.0.1:{port}", password_file)
        start_prometheus(procs, prometheus, tmp, prom_config, prom_port)
        procs.start(
            "simulator",
            [sys.executable, "-m", "exporter", "simulate", "--listen", f"127.0.0.1:{sim_port}"],
            env,
        )
        procs.start(
            "exporter",
            [sys.executable, "-m", "exporter", "run", "--config", str(config),
             "--web.config.file", str(web)],
            env,
        )  # fmt: skip
        stack = TlsStack(f"https://127.0.0.1:{port}", f"http://127.0.0.1:{prom_port}", certs.ca)
        wait_for("the exporter's port", lambda: _accepts(port), STARTUP_SECONDS, procs)
        wait_for(
            "Prometheus /-/ready",
            lambda: http("GET", f"{stack.prom}/-/ready")[0] == 200,
            STARTUP_SECONDS,
            procs,
        )
        yield stack
    finally:
        procs.stop()


def _accepts(port: int) -> bool:
    """The exporter listens (each test may be the first to reach it: tests run in any order)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_prometheus_scrapes_over_https_with_basic_auth(tls_stack: TlsStack) -> None:
    def scraped() -> dict[str, Any]:
        targets = tls_stack.targets()
        if targets.get(GOOD, {}).get("health") != "up":
            raise NotYet(f"{GOOD}: {targets.get(GOOD)}")
        if targets.get(WRONG, {}).get("health") != "down":
            raise NotYet(f"{WRONG}: {targets.get(WRONG)}")
        return targets

    targets = wait_for("both targets scraped", scraped, STARTUP_SECONDS)
    assert targets[GOOD]["scrapeUrl"].startswith("https://127.0.0.1:")
    assert "401 Unauthorized" in targets[WRONG]["lastError"]
    status, body, _ = http(
        "GET",
        f"{tls_stack.prom}/api/v1/query?query=cdnvideo_exporter_build_info%7Bjob%3D%22{GOOD}%22%7D",
    )
    assert status == 200
    assert b'"version"' in body


def test_plain_http_to_the_tls_port_fails(tls_stack: TlsStack) -> None:
    plain = tls_stack.exporter.replace("https://", "http://")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"{plain}/healthz", timeout=5)
    context = ssl.create_default_context(cafile=str(tls_stack.ca))
    with urllib.request.urlopen(f"{tls_stack.exporter}/healthz", timeout=5, context=context) as r:
        assert r.status == 200


def test_a_wrong_password_gets_401(tls_stack: TlsStack) -> None:
    context = ssl.create_default_context(cafile=str(tls_stack.ca))
    request = urllib.request.Request(
        f"{tls_stack.exporter}/metrics", headers={"Authorization": "Basic cHJvbWV0aGV1czp4"}
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5, context=context)
    assert caught.value.code == 401
    assert caught.value.headers["WWW-Authenticate"].startswith("Basic ")
