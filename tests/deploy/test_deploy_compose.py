"""The compose stack: schema-valid, every referenced file present, every service's config valid."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy.deploy_helpers import (
    COMPOSE_DIR,
    DASHBOARDS,
    REPO,
    compose,
    dashboards,
    load_yaml,
    run,
    tool,
)

SERVICES = {"simulator", "exporter", "prometheus", "alertmanager", "grafana"}


def bind_mounts(service: dict[str, Any]) -> list[tuple[Path, str]]:
    """(host path, container path) of every bind mount in short syntax; volumes are skipped."""
    mounts = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append(((COMPOSE_DIR / source).resolve(), target))
    return mounts


def container_path(service: dict[str, Any], path: str) -> Path | None:
    """The host file behind a path inside the container, through the bind mounts."""
    for host, target in bind_mounts(service):
        inside = PurePosixPath(path)
        mount = PurePosixPath(target)
        if inside == mount:
            return host
        if mount in inside.parents:
            return host / inside.relative_to(mount)
    return None


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url if "//" in url else f"//{url}")
    assert parts.hostname, url
    assert parts.port, url
    return parts.hostname, parts.port


def listen_port(service: dict[str, Any]) -> int:
    command = service["command"]
    return int(command[command.index("--listen") + 1].rpartition(":")[2])


def test_compose_file_matches_the_compose_specification() -> None:
    checker = tool("check-jsonschema", "the dev extras (pip install -e '.[dev]')")
    result = run([checker, "--builtin-schema", "vendor.compose-spec", "compose.yaml"], COMPOSE_DIR)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_brings_up_the_whole_stack() -> None:
    services = compose()["services"]
    assert set(services) == SERVICES
    exporter = services["exporter"]
    assert exporter["command"][:2] == ["run", "--config"]
    assert services["simulator"]["command"][0] == "simulate"
    # The exporter's container runs with a read-only root; state goes to a named volume.
    assert exporter["read_only"] is True
    assert any(v.endswith(":/var/lib/cdnvideo-exporter") for v in exporter["volumes"])


def test_every_referenced_file_exists() -> None:
    data = compose()
    checked = 0
    for name, service in data["services"].items():
        build = service.get("build")
        if build:
            context = (COMPOSE_DIR / build["context"]).resolve()
            assert context.is_dir(), f"{name}: build context {context}"
            assert (context / build.get("dockerfile", "Dockerfile")).is_file(), name
            checked += 1
        for host, target in bind_mounts(service):
            assert host.exists(), f"{name}: {host} (mounted at {target}) does not exist"
            checked += 1
        for env_file in service.get("env_file", []):
            assert (COMPOSE_DIR / env_file).is_file(), f"{name}: env_file {env_file}"
    assert checked >= 8
    for volume in (
        v.split(":")[0] for s in data["services"].values() for v in s.get("volumes", [])
    ):
        if not volume.startswith((".", "/")):
            assert volume in data["volumes"], f"named volume {volume} is not declared"


def test_exporter_reads_the_mounted_config_and_reaches_the_simulator() -> None:
    services = compose()["services"]
    exporter = services["exporter"]
    config_path = exporter["command"][exporter["command"].index("--config") + 1]
    host_file = container_path(exporter, config_path)
    assert host_file is not None, config_path
    assert host_file.is_file(), config_path
    config = load_yaml(host_file)
    host, port = host_port(config["upstream"]["base_url"])
    assert host == "simulator"
    assert port == listen_port(services["simulator"])
    assert exporter["depends_on"]["simulator"]["condition"] == "service_healthy"


def test_prometheus_config_is_valid_inside_its_container(tmp_path: Path) -> None:
    """Rebuild the container's view of its files from the bind mounts, then promtool it."""
    promtool = tool("promtool", "the Debian package prometheus")
    prometheus = compose()["services"]["prometheus"]
    for host, target in bind_mounts(prometheus):
        if host.is_file():
            dest = tmp_path / target.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(host, dest)
    config_flag = next(a for a in prometheus["command"] if a.startswith("--config.file="))
    config = tmp_path / config_flag.partition("=")[2].lstrip("/")
    result = run([promtool, "check", "config", str(config)])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # The shipped rules were found through rule_files and checked as well.
    assert "SUCCESS: 1 rule files found" in output, output
    assert "rules/cdnvideo.yml" in output, output


def test_prometheus_scrapes_the_exporter_and_alerts_through_alertmanager() -> None:
    services = compose()["services"]
    prometheus = services["prometheus"]
    config_file = container_path(prometheus, "/etc/prometheus/prometheus.yml")
    assert config_file is not None
    config = load_yaml(config_file)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    # The alert rules and the exporter-health dashboard rely on this job name.
    targets = jobs["cdnvideo-exporter"]["static_configs"][0]["targets"]
    assert targets == ["exporter:9877"]
    assert any(p.endswith(":9877") for p in services["exporter"]["ports"])
    am_targets = config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    host, _ = host_port(am_targets[0])
    assert host in services


def test_alertmanager_config_is_valid() -> None:
    amtool = tool("amtool", "the Debian package prometheus-alertmanager")
    alertmanager = compose()["services"]["alertmanager"]
    config = container_path(alertmanager, "/etc/alertmanager/alertmanager.yml")
    assert config is not None
    result = run([amtool, "check-config", str(config)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_alertmanager_inhibit_rules_name_real_alerts() -> None:
    from tests.deploy.deploy_helpers import alert_rules

    alerts = {r["alert"] for r in alert_rules()}
    config = load_yaml(COMPOSE_DIR / "alertmanager.yml")
    named = []
    for rule in config["inhibit_rules"]:
        for matcher in rule["source_matchers"] + rule["target_matchers"]:
            label, _, value = matcher.partition("=")
            if label == "alertname":
                named += value.lstrip("~").strip('"').split("|")
    assert named
    assert set(named) <= alerts


def test_grafana_is_provisioned_with_the_datasource_and_every_dashboard() -> None:
    services = compose()["services"]
    grafana = services["grafana"]
    provisioning = container_path(grafana, "/etc/grafana/provisioning")
    assert provisioning is not None
    assert provisioning.is_dir()

    datasources = load_yaml(provisioning / "datasources" / "datasources.yml")["datasources"]
    prometheus = next(d for d in datasources if d["type"] == "prometheus")
    assert prometheus["isDefault"] is True
    host, port = host_port(prometheus["url"])
    assert host == "prometheus"
    assert port == 9090
    for other in datasources:
        assert host_port(other["url"])[0] in services

    providers = load_yaml(provisioning / "dashboards" / "cdnvideo.yml")["providers"]
    assert len(providers) == 1
    folder = container_path(grafana, providers[0]["options"]["path"])
    assert folder is not None
    assert folder.resolve() == DASHBOARDS.resolve()
    assert len(dashboards()) >= 5

    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    home_file = container_path(grafana, home)
    assert home_file is not None, home
    assert home_file.is_file(), home


@pytest.mark.parametrize("service", ["simulator", "exporter"])
def test_exporter_image_services_build_from_the_repository(service: str) -> None:
    spec = compose()["services"][service]
    assert (COMPOSE_DIR / spec["build"]["context"]).resolve() == REPO
    assert spec["image"] == compose()["services"]["exporter"]["image"]
