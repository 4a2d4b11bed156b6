"""The Helm chart (deploy/helm/cdnvideo-exporter): ``helm lint`` and ``helm template`` with
Helm's own engine (helm-python-sdk binds Helm's Go SDK; no helm binary is published for Linux
on the registries CI reaches), every rendered object valid for Kubernetes, the toggles doing
what they say, the PrometheusRule equal to deploy/prometheus/rules.yml."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config import load_config
from exporter.config.report import masked_dict
from tests.deploy.deploy_helpers import DEPLOY, RULES, load_yaml, module, run

CHART = DEPLOY / "helm" / "cdnvideo-exporter"
CRDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}
EVERYTHING_ON = {
    "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "prometheusRule": {"enabled": True},
    "shards": 3,
    "replicasPerShard": 2,
}


def helm() -> Any:
    return module("helm_python", "the dev extras (pip install -e '.[dev]', helm-python-sdk)")


@functools.lru_cache(maxsize=8)
def _render(values: str) -> tuple[dict[str, Any], ...]:
    with helm().Chart.load(CHART) as chart:
        manifests = chart.render(json.loads(values), name="rel", namespace="monitoring")
    docs = []
    for path, text in sorted(manifests.items()):
        if path.endswith(".yaml"):
            docs += [d for d in yaml.safe_load_all(text) if d]
    return tuple(docs)


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return list(_render(json.dumps(values or {}, sort_keys=True)))


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def test_helm_lint_strict_finds_no_warning_or_error() -> None:
    report = helm().lint(CHART, strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_lint_and_template_do_catch_mistakes(tmp_path: Path) -> None:
    broken = tmp_path / "cdnvideo-exporter"
    shutil.copytree(CHART, broken)
    chart = (broken / "Chart.yaml").read_text(encoding="utf-8")
    (broken / "Chart.yaml").write_text(chart.replace("version: 0.1.0", "version: one"))
    report = helm().lint(broken, strict=True)
    assert report["errors"] or [m for m in report["messages"] if m["severity"] >= 3]
    with helm().Chart.load(CHART) as chart, pytest.raises(helm().HelmRenderError) as refused:
        chart.render({"shards": 0}, name="rel")
    assert "shards must be 1 or more" in str(refused.value)


@pytest.mark.parametrize("values", [{}, EVERYTHING_ON], ids=["defaults", "everything-on"])
def test_every_rendered_object_validates_against_the_kubernetes_schemas(
    values: dict[str, Any],
) -> None:
    kv = module("kubernetes_validate", "the dev extras (pip install -e '.[dev]')")
    objects = render(values)
    for obj in objects:
        if (obj["apiVersion"], obj["kind"]) not in CRDS:
            kv.validate(obj, "1.28.0", strict=True)
            kv.validate(obj, kv.latest_version(), strict=True)
    kinds = sorted(o["kind"] for o in objects)
    expected = ["ConfigMap", "Secret", "Service", "Service", "ServiceAccount", "StatefulSet"]
    if values:
        expected += ["PrometheusRule", "ServiceMonitor"]
    assert kinds == sorted(expected)


def test_shards_and_replicas_set_the_pods_the_shard_count_and_the_admin_copies() -> None:
    objects = render(EVERYTHING_ON)
    sts = one(objects, "StatefulSet")
    assert sts["spec"]["replicas"] == 6
    env = {
        e["name"]: e.get("value") for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["CDNVIDEO_SHARDS"] == "3"
    config = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yml"])
    assert config["admin"]["replicas_per_shard"] == 2


def test_the_rendered_config_is_one_the_exporter_accepts(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_text(one(render(), "ConfigMap")["data"]["config.yml"])
    settings = load_config(path, env={"CDNVIDEO_TOKEN": "t0ken"})
    shown = masked_dict(settings)
    assert shown["traffic"]["state_file"] == "/var/lib/cdnvideo-exporter/traffic-state.json"
    sts = one(render(), "StatefulSet")
    mounts = {
        m["name"]: m["mountPath"]
        for m in sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    }
    assert mounts["state"] == "/var/lib/cdnvideo-exporter"


def test_an_existing_secret_replaces_the_charts_own() -> None:
    objects = render({"secret": {"existingSecret": "my-credentials"}})
    assert "Secret" not in [o["kind"] for o in objects]
    container = one(objects, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    assert container["envFrom"] == [{"secretRef": {"name": "my-credentials"}}]
    own = one(render({"secret": {"token": "t0ken"}}), "Secret")
    assert own["stringData"]["CDNVIDEO_TOKEN"] == "t0ken"


def test_persistence_off_keeps_the_state_in_an_empty_dir() -> None:
    on = one(render(), "StatefulSet")["spec"]
    assert on["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "64Mi"
    off = one(render({"persistence": {"enabled": False}}), "StatefulSet")["spec"]
    assert "volumeClaimTemplates" not in off
    volumes = {v["name"]: v for v in off["template"]["spec"]["volumes"]}
    assert "emptyDir" in volumes["state"]


def test_the_pod_runs_non_root_on_a_read_only_root_with_resources() -> None:
    pod = one(render(), "StatefulSet")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = pod["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["limits"]["memory"] == "512Mi"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_the_prometheus_rule_holds_the_rule_file_and_the_copy_is_current() -> None:
    rule = one(render(EVERYTHING_ON), "PrometheusRule")
    assert rule["spec"]["groups"] == load_yaml(RULES)["groups"]
    monitor = one(render(EVERYTHING_ON), "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/name"
    done = run(["python3", str(DEPLOY / "k8s" / "sync_rules.py"), "--check"])
    assert (done.returncode, done.stderr) == (0, "")
