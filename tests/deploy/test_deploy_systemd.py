"""The systemd unit (deploy/systemd/): ``systemd-analyze verify`` finds nothing, the service is
hardened and reloads with SIGHUP, and its env file and config name only what the exporter
reads."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from exporter.config import load_config
from exporter.config.settings import ENV_OVERRIDES
from exporter.traffic.settings import TRAFFIC_SECTION
from tests.deploy.deploy_helpers import DEPLOY, run, tool

UNIT = DEPLOY / "systemd" / "cdnvideo-exporter.service"
ENV = DEPLOY / "systemd" / "cdnvideo-exporter.env"
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
    assert s["EnvironmentFile"] == ["-/etc/cdnvideo-exporter/env"]
    start = s["ExecStart"][0].split()
    assert start[:2] == [BINARY, "run"]
    assert "--config.file=/etc/cdnvideo-exporter/config.yml" in start


def test_the_env_file_names_only_variables_the_exporter_reads() -> None:
    names = re.findall(r"^#?([A-Z][A-Z0-9_]*)=", ENV.read_text(encoding="utf-8"), re.M)
    assert names
    assert set(names) <= set(ENV_OVERRIDES)
    assert not re.findall(r"^[A-Z]", ENV.read_text(encoding="utf-8"), re.M)  # all commented


def test_the_config_keeps_its_state_in_the_state_directory() -> None:
    settings = load_config(CONFIG, env={"CDNVIDEO_TOKEN": "t0ken"})
    state = Path(TRAFFIC_SECTION.of(settings).state_file)
    assert state.parent == Path("/var/lib") / service()["StateDirectory"][0]
