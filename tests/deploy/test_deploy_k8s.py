"""Kubernetes manifests: kustomize renders them, they match the schemas and fit together."""

from __future__ import annotations

import copy
import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.deploy_helpers import REPO, kustomize_render, module

# Kubernetes versions the manifests must be valid for: the oldest supported here, and the
# newest whose schemas kubernetes-validate ships.
VERSIONS = ("1.28.0", "latest")
CRDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}


@functools.lru_cache(maxsize=1)
def _rendered() -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(d for d in yaml.load_all(kustomize_render(), Loader=loader) if d)


def objects() -> list[dict[str, Any]]:
    """The rendered objects (shared between tests: copy before changing one)."""
    return list(_rendered())


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects() if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container() -> dict[str, Any]:
    containers = one("StatefulSet")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def k8s_version(version: str) -> str:
    kv = module("kubernetes_validate", "the dev extras (pip install -e '.[dev]')")
    return kv.latest_version() if version == "latest" else version


def test_render_holds_every_object_issue_7_asks_for() -> None:
    kinds = sorted(o["kind"] for o in objects())
    assert kinds == sorted(
        [
            "ConfigMap",
            "NetworkPolicy",
            "PodDisruptionBudget",
            "PrometheusRule",
            "Secret",
            "Service",
            "Service",
            "ServiceAccount",
            "ServiceMonitor",
            "StatefulSet",
        ]
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_validates_against_the_kubernetes_schemas(version: str) -> None:
    kv = module("kubernetes_validate", "the dev extras (pip install -e '.[dev]')")
    validated = 0
    for obj in objects():
        if (obj["apiVersion"], obj["kind"]) in CRDS:
            continue
        kv.validate(obj, k8s_version(version), strict=True)
        validated += 1
    assert validated == len(objects()) - len(CRDS)


def test_the_schema_check_rejects_a_misspelt_field() -> None:
    kv = module("kubernetes_validate", "the dev extras (pip install -e '.[dev]')")
    broken = copy.deepcopy(one("StatefulSet"))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, k8s_version("latest"), strict=True)


def test_statefulset_runs_non_root_on_a_read_only_root() -> None:
    pod = one("StatefulSet")["spec"]["template"]["spec"]
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] > 0
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["automountServiceAccountToken"] is False
    c = container()["securityContext"]
    assert c["readOnlyRootFilesystem"] is True
    assert c["allowPrivilegeEscalation"] is False
    assert c["capabilities"]["drop"] == ["ALL"]
    # The same user the image declares, so files on the volume keep one owner.
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    uid = re.search(r"^ARG UID=(\d+)$", dockerfile, re.MULTILINE)
    assert uid
    assert int(uid.group(1)) == security["runAsUser"]


def test_statefulset_has_resources_and_probes_on_health_endpoints() -> None:
    c = container()
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][kind]), kind
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http": 9877}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}


def test_pod_mounts_the_config_secret_and_state_it_needs() -> None:
    sts = one("StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    c = container()
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    # Config: the generated ConfigMap (hash-suffixed name) holding config.yml, at the path
    # the command reads.
    config_map = volumes[mounts["config"]["name"]]["configMap"]["name"]
    assert "config.yml" in one("ConfigMap", config_map)["data"]
    assert "--config /etc/cdnvideo-exporter/config.yml" in c["args"][0]
    assert mounts["config"]["mountPath"] == "/etc/cdnvideo-exporter"
    # State: a persistent volume per pod at the state directory of the image.
    assert mounts["state"]["mountPath"] == "/var/lib/cdnvideo-exporter"
    assert "state" in claims
    # Every mount is backed by a volume or a claim template.
    assert set(mounts) <= set(volumes) | claims
    # Credentials: the Secret, whose keys are the variables the exporter reads.
    secret = one("Secret", c["envFrom"][0]["secretRef"]["name"])
    assert {"CDNVIDEO_TOKEN", "CDNVIDEO_PASSWORD"} <= set(secret["stringData"])


def test_shard_count_and_replicas_fit_together() -> None:
    sts = one("StatefulSet")
    env = {e["name"]: e for e in container()["env"]}
    shards = int(env["CDNVIDEO_SHARDS"]["value"])
    assert sts["spec"]["replicas"] % shards == 0, "replicas must be shards x copies"
    assert sts["spec"]["replicas"] // shards >= 2, "the base runs two copies of each shard (HA)"
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


@pytest.fixture
def fake_exporter(tmp_path: Path) -> Path:
    """A stand-in for cdnvideo-exporter that prints the shard and arguments it was given."""
    script = tmp_path / "cdnvideo-exporter"
    script.write_text('#!/bin/sh\necho "shard=$CDNVIDEO_SHARD args=$*"\n')
    script.chmod(0o755)
    return tmp_path


def start(fake_bin: Path, pod: str, shards: str) -> subprocess.CompletedProcess[str]:
    c = container()
    env = {
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
        "POD_NAME": pod,
        "CDNVIDEO_SHARDS": shards,
    }
    return subprocess.run(
        [*c["command"], *c["args"]], env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("pod", "shards", "shard"),
    [
        ("cdnvideo-exporter-0", "1", "0/1"),
        ("cdnvideo-exporter-1", "1", "0/1"),
        ("cdnvideo-exporter-0", "3", "0/3"),
        ("cdnvideo-exporter-2", "3", "2/3"),
        ("cdnvideo-exporter-4", "3", "1/3"),  # second copy of shard 1
        ("prod-cdnvideo-exporter-5", "3", "2/3"),  # a kustomize namePrefix
    ],
)
def test_pod_ordinal_selects_the_shard(
    fake_exporter: Path, pod: str, shards: str, shard: str
) -> None:
    result = start(fake_exporter, pod, shards)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"shard={shard} args=run --config /etc/cdnvideo-exporter/config.yml"
    )


@pytest.mark.parametrize(("pod", "shards"), [("cdnvideo-exporter", "2"), ("x-1", "0"), ("x-1", "")])
def test_pod_refuses_to_start_without_a_usable_shard(
    fake_exporter: Path, pod: str, shards: str
) -> None:
    result = start(fake_exporter, pod, shards)
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.strip()


def test_services_select_the_pods_and_only_one_is_scraped() -> None:
    sts = one("StatefulSet")
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    assert matches(sts["spec"]["selector"]["matchLabels"], pod_labels)
    services = [o for o in objects() if o["kind"] == "Service"]
    for service in services:
        assert matches(service["spec"]["selector"], pod_labels), service["metadata"]["name"]
        assert service["spec"]["publishNotReadyAddresses"] is True
        assert service["spec"]["ports"][0]["targetPort"] == "http"
    headless = one("Service", sts["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"

    monitor = one("ServiceMonitor")
    scraped = [
        s
        for s in services
        if matches(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    assert len(scraped) == 1, "exactly one Service may be scraped, or every pod is scraped twice"
    port_names = {p["name"] for p in scraped[0]["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["port"] in port_names
        assert endpoint["path"] == "/metrics"
    # The alert rules expect job="cdnvideo-exporter", whatever the Service is called.
    label = monitor["spec"]["jobLabel"]
    assert scraped[0]["metadata"]["labels"][label] == "cdnvideo-exporter"


def test_prometheusrule_structure() -> None:
    rule = one("PrometheusRule")
    groups = rule["spec"]["groups"]
    assert groups
    assert all(g["name"] and g["rules"] for g in groups)
    for group in groups:
        for r in group["rules"]:
            assert set(r) <= {
                "alert",
                "record",
                "expr",
                "for",
                "labels",
                "annotations",
                "keep_firing_for",
            }
            assert r["expr"].strip()


def test_network_policy_admits_prometheus_and_reaches_dns_and_https() -> None:
    pod_labels = one("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    policy = one("NetworkPolicy")["spec"]
    assert matches(policy["podSelector"]["matchLabels"], pod_labels)
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    ingress_ports = {p["port"] for rule in policy["ingress"] for p in rule["ports"]}
    assert ingress_ports == {9877}
    egress_ports = {(p["protocol"], p["port"]) for rule in policy["egress"] for p in rule["ports"]}
    assert {("UDP", 53), ("TCP", 53), ("TCP", 443)} <= egress_ports


def test_disruption_budget_keeps_all_but_one_pod() -> None:
    pod_labels = one("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    pdb = one("PodDisruptionBudget")["spec"]
    assert matches(pdb["selector"]["matchLabels"], pod_labels)
    assert pdb["maxUnavailable"] == 1
