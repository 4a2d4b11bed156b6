"""Every deployment artefact is well-formed YAML/JSON; the shipped exporter configs are valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from exporter.talking_head.settings import TALKING_HEAD_SECTION
from exporter.traffic.settings import TRAFFIC_SECTION
from tests.deploy.deploy_helpers import DASHBOARDS, DEPLOY, REPO, load_yaml

# Helm templates are Go templates that render to YAML (tests/deploy/test_deploy_helm.py).
YAML_FILES = sorted(
    p
    for p in [*DEPLOY.rglob("*.yml"), *DEPLOY.rglob("*.yaml")]
    if "templates" not in p.relative_to(DEPLOY).parts
)
JSON_FILES = sorted([*DEPLOY.rglob("*.json"), *DASHBOARDS.rglob("*.json")])


def test_artefacts_exist() -> None:
    names = {p.relative_to(REPO).as_posix() for p in YAML_FILES + JSON_FILES}
    for expected in (
        "deploy/compose/compose.yaml",
        "deploy/prometheus/rules.yml",
        "deploy/prometheus/rules.test.yml",
        "deploy/k8s/kustomization.yaml",
    ):
        assert expected in names
    assert len(JSON_FILES) >= 5, "expected the five dashboards at least"


def test_no_config_lies_at_the_repository_root() -> None:
    """Configs live under deploy/ (and tests make their own in a temporary directory): a
    stray one at the root (a test's port in it) is a leftover, not an example."""
    stray = sorted(p.name for p in REPO.glob("*.y*ml"))
    assert stray == []


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_yaml_parses(path: Path) -> None:
    docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    assert docs
    assert all(isinstance(d, dict) for d in docs), "each document must be a mapping"


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_json_parses(path: Path) -> None:
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)


CONFIGS = ["deploy/docker/config.yml", "deploy/k8s/config.yml", "deploy/compose/exporter.yml"]


@pytest.mark.parametrize("rel", CONFIGS)
def test_shipped_exporter_configs_are_valid(rel: str) -> None:
    from exporter.config import load_config

    env = {"CDNVIDEO_TOKEN": "t0ken", "CDNVIDEO_SHARD": "1/3"}
    settings = load_config(REPO / rel, env)
    assert settings.upstream.token == "t0ken"
    assert str(settings.shard) == "1/3"
    assert settings.listen_port == 9877
    # The state file lives on the volume, the only writable place in the container.
    assert TRAFFIC_SECTION.of(settings).state_file.startswith("/var/lib/cdnvideo-exporter/")


@pytest.mark.parametrize("rel", CONFIGS)
def test_shipped_exporter_configs_refuse_to_run_without_credentials(rel: str) -> None:
    from exporter.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="credentials"):
        load_config(REPO / rel, {})


def test_k8s_config_keeps_two_replicas_under_a_tenth_of_the_talking_head_allowance() -> None:
    from exporter.config import load_config
    from exporter.talking_head.settings import TALKING_HEAD_MONTHLY_ALLOWANCE

    settings = load_config(DEPLOY / "k8s" / "config.yml", {"CDNVIDEO_TOKEN": "t"})
    per_month = 30 * 86400 / TALKING_HEAD_SECTION.of(settings).interval_seconds
    assert 2 * per_month <= TALKING_HEAD_MONTHLY_ALLOWANCE * 0.10


def test_compose_exporter_config_watches_the_simulator_demo_data() -> None:
    config = load_yaml(DEPLOY / "compose" / "exporter.yml")
    accounts = {a["name"]: a["dvr_streams"] for a in config["accounts"]}
    assert accounts == {"demo-media": ["live/main", "news"], "demo-shop": ["live/main", "news"]}
