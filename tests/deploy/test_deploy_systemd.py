"""The systemd unit (deploy/systemd/): ``systemd-analyze verify`` finds nothing, the service is
hardened and reloads with SIGHUP, the exporter keeps its process metrics under the unit's
/proc view, secrets arrive through ``LoadCredential=``, and its env file and config name only
what the exporter reads."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from exporter.config import load_config
from exporter.traffic.settings import TRAFFIC_SECTION
from tests.deploy.deploy_helpers import CLIENT_SERIES, DEPLOY, missing, run, tool
from tests.system.system_stack import free_port

UNIT = DEPLOY / "systemd" / "cdnvideo-exporter.service"
CONFIG = DEPLOY / "systemd" / "config.yml"
BINARY = "/opt/cdnvideo-exporter/bin/cdnvideo-exporter"


def service() -> dict[str, list[str]]:
    """The [Service] section: key -> every value given (keys may repeat)."""
    values: dict[str, list[str]] = {}
    section = ""
    text = UNIT.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values.setdefault(key, []).append(" ".join(value.split()))
    return values


def test_systemd_analyze_verify_finds_nothing(tmp_path: Path) -> None:
    """Verified with the binary of this venv in place of the install path (verify checks that
    the command exists)."""
    analyze = tool("systemd-analyze", "the Debian package systemd")
    binary = Path(sys.executable).parent / "cdnvideo-exporter"
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text(encoding="utf-8").replace(BINARY, str(binary)))
    done = run([analyze, "verify", str(unit)])
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_verify_does_catch_a_mistake(tmp_path: Path) -> None:
    analyze = tool("systemd-analyze", "the Debian package systemd")
    unit = tmp_path / UNIT.name
    text = UNIT.read_text(encoding="utf-8").replace(BINARY, str(Path(sys.executable)))
    unit.write_text(text.replace("ProtectSystem=strict", "ProtectSystm=strict"))
    done = run([analyze, "verify", str(unit)])
    assert "Unknown key 'ProtectSystm'" in done.stdout + done.stderr


def test_the_service_is_hardened_and_reloads_with_sighup() -> None:
    s = service()
    assert s["DynamicUser"] == ["yes"]
    assert s["StateDirectory"] == ["cdnvideo-exporter"]
    assert s["ProtectSystem"] == ["strict"]
    for key in ("NoNewPrivileges", "PrivateTmp", "PrivateDevices", "ProtectHome"):
        assert s[key] == ["yes"], key
    assert s["CapabilityBoundingSet"] == [""]
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    start = s["ExecStart"][0].split()
    assert start[:2] == [BINARY, "run"]
    assert "--config.file=/etc/cdnvideo-exporter/config.yml" in start


def test_the_config_keeps_its_state_in_the_state_directory(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t0ken")
    settings = load_config(CONFIG, env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    state = Path(TRAFFIC_SECTION.of(settings).state_file)
    assert state.parent == Path("/var/lib") / service()["StateDirectory"][0]


def proc_options(unit: dict[str, list[str]]) -> str:
    """The mount options systemd gives the service's /proc (systemd.exec(5): ProtectProc= is
    hidepid=, ProcSubset=pid is subset=pid)."""
    options = [f"hidepid={unit['ProtectProc'][0]}"] if "ProtectProc" in unit else []
    if unit.get("ProcSubset") == ["pid"]:
        options.append("subset=pid")
    return ",".join(options) or "defaults"


def test_the_process_metrics_survive_the_units_proc_view() -> None:
    """The demo in a mount and PID namespace whose /proc is mounted as the unit mounts it:
    /metrics still has every process_* series (subset=pid hides /proc/stat, which
    prometheus-client needs for the boot time, and the process collector then reports none)."""
    unshare = tool("unshare", "the Debian package util-linux")
    port = free_port()
    mount = f'mount -t proc -o {proc_options(service())} proc /proc && exec "$@"'
    demo = [sys.executable, "-m", "exporter", "demo", "--listen", f"127.0.0.1:{port}"]
    demo += ["--simulator-listen", "127.0.0.1:0"]
    args = [unshare, "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", mount, "sh", *demo]
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        metrics = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    metrics = r.read().decode()
                break
            except OSError:
                time.sleep(0.3)
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            if err.startswith(("unshare:", "mount:")):  # no namespaces here (a container)
                missing(f"cannot mount the unit's /proc view here: {err.strip()[:300]}")
            pytest.fail(f"the demo stopped under the unit's /proc view: {err[-2000:]}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # unshare, and the demo in its namespace
        proc.wait(timeout=30)
    found = set(re.findall(r"^(process_[a-z_]+) ", metrics, re.M))
    assert found == {name for name in CLIENT_SERIES if name.startswith("process_")}


def test_secrets_reach_the_service_as_credentials_only_it_can_read() -> None:
    """LoadCredential= copies each secret into $CREDENTIALS_DIRECTORY (readable by the dynamic
    user only); the config names them with *_file keys, so no secret is in the environment."""
    s = service()
    assert s["LoadCredential"] == ["token:/etc/cdnvideo-exporter/token"]
    assert "EnvironmentFile" not in s
    text = CONFIG.read_text(encoding="utf-8")
    assert "  token_file: ${CREDENTIALS_DIRECTORY}/token\n" in text


def test_the_config_reads_the_token_from_the_credentials_directory(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t0ken-from-a-credential\n")
    settings = load_config(CONFIG, env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert settings.upstream.token == "t0ken-from-a-credential"
