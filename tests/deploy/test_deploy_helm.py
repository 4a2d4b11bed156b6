"""The Helm chart (deploy/helm/cdnvideo-exporter): ``helm lint`` and ``helm template`` with
Helm's own engine (helm-python-sdk binds Helm's Go SDK; no helm binary is published for Linux
on the registries CI reaches), every rendered object of every documented value combination
valid for Kubernetes, the toggles doing what they say, values.schema.json refusing wrong types,
the PrometheusRule equal to deploy/prometheus/rules.yml."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config import Settings, Shard, load_config
from exporter.config.report import masked_dict
from tests.deploy.deploy_helpers import DEPLOY, RULES, load_yaml, module, run

CHART = DEPLOY / "helm" / "cdnvideo-exporter"
CRDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}
TOKEN = {"secret": {"token": "t0ken"}}
EVERYTHING_ON = {
    **TOKEN,
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
    """The objects of a release with these values (the token alone by default)."""
    return list(_render(json.dumps(TOKEN if values is None else values, sort_keys=True)))


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def refusal(values: dict[str, Any]) -> str:
    """Helm's error for values it must refuse."""
    with helm().Chart.load(CHART) as chart, pytest.raises(helm().HelmError) as refused:
        chart.render(values, name="rel", namespace="monitoring")
    return str(refused.value)


def pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "StatefulSet")["spec"]["template"]["spec"]
    return spec


def pod_settings(objects: list[dict[str, Any]], tmp: Path, ordinal: int = 0) -> Settings:
    """The exporter's settings in pod ``ordinal``: the rendered config, with the chart's Secret
    written where the pod mounts it (moved under ``tmp``), the pod's environment."""
    secrets = tmp / "secrets"
    secrets.mkdir(exist_ok=True)
    for key, value in one(objects, "Secret")["stringData"].items():
        (secrets / key).write_text(value)
    text = one(objects, "ConfigMap")["data"]["config.yml"]
    path = tmp / "config.yml"
    path.write_text(text.replace("/etc/cdnvideo-exporter/secrets", str(secrets)))
    env = {e["name"]: e.get("value", "") for e in pod(objects)["containers"][0]["env"]}
    env["POD_NAME"] = f"rel-cdnvideo-exporter-{ordinal}"
    return load_config(path, env=env)


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
    assert "at '/shards': minimum: got 0, want 1" in refusal({**TOKEN, "shards": 0})


@pytest.mark.parametrize("values", [TOKEN, EVERYTHING_ON], ids=["defaults", "everything-on"])
def test_every_rendered_object_validates_against_the_kubernetes_schemas(
    values: dict[str, Any],
) -> None:
    objects = render(values)
    validate(objects)
    kinds = sorted(o["kind"] for o in objects)
    expected = ["ConfigMap", "Secret", "Service", "Service", "ServiceAccount", "StatefulSet"]
    expected += ["PodDisruptionBudget"]
    if values is EVERYTHING_ON:
        expected += ["PrometheusRule", "ServiceMonitor"]
    assert kinds == sorted(expected)


def validate(objects: list[dict[str, Any]]) -> None:
    kv = module("kubernetes_validate", "the dev extras (pip install -e '.[dev]')")
    for obj in objects:
        if (obj["apiVersion"], obj["kind"]) not in CRDS:
            kv.validate(obj, "1.28.0", strict=True)
            kv.validate(obj, kv.latest_version(), strict=True)


def test_shards_and_replicas_set_the_pods_the_shard_count_and_the_admin_copies(
    tmp_path: Path,
) -> None:
    objects = render(EVERYTHING_ON)
    assert one(objects, "StatefulSet")["spec"]["replicas"] == 6
    config = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yml"])
    assert config["admin"]["replicas_per_shard"] == 2
    shards = [pod_settings(objects, tmp_path, ordinal).shard for ordinal in range(6)]
    assert shards == [Shard(0, 3), Shard(1, 3), Shard(2, 3)] * 2


def test_the_rendered_config_is_one_the_exporter_accepts(tmp_path: Path) -> None:
    settings = pod_settings(render(), tmp_path)
    assert settings.upstream.token == "t0ken"
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
    volumes = {
        v["name"]: v for v in one(objects, "StatefulSet")["spec"]["template"]["spec"]["volumes"]
    }
    assert volumes["secrets"]["secret"]["secretName"] == "my-credentials"
    own = one(render(), "Secret")
    assert own["stringData"] == {"token": "t0ken"}


def test_persistence_off_keeps_the_state_in_an_empty_dir() -> None:
    on = one(render(), "StatefulSet")["spec"]
    assert on["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "64Mi"
    off = one(render({**TOKEN, "persistence": {"enabled": False}}), "StatefulSet")["spec"]
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


# ---- every documented value combination (docs/deploy.md, "Helm") -------------------------

WEB = {"webConfig": {"existingSecret": "exporter-web"}}
ADMIN = {
    "config": {"admin": {"enabled": True}},
    "secret": {
        "token": "t0ken",
        "adminReadToken": "read-token-0123456",
        "adminWriteToken": "write-token-0123456",
    },
}
COMBINATIONS: dict[str, dict[str, Any]] = {
    "login": {"secret": {"username": "ops@example.com", "password": "pa55"}},
    "existing-secret": {"secret": {"existingSecret": "my-credentials"}},
    "digest": {**TOKEN, "image": {"digest": "sha256:" + "ab" * 32}},
    "extras": {
        **TOKEN,
        "extraArgs": ["--web.enable-lifecycle", "--log.level=debug"],
        "extraEnv": [{"name": "TZ", "value": "UTC"}],
        "extraVolumes": [{"name": "ca", "configMap": {"name": "corp-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/corp-ca", "readOnly": True}],
    },
    "tls-and-basic-auth": {
        **TOKEN,
        **WEB,
        "serviceMonitor": {
            "enabled": True,
            "tlsConfig": {"ca": {"secret": {"name": "exporter-web", "key": "ca.crt"}}},
            "basicAuth": {
                "username": {"name": "scrape-auth", "key": "username"},
                "password": {"name": "scrape-auth", "key": "password"},
            },
            "relabelings": [{"targetLabel": "cluster", "replacement": "eu-1"}],
            "metricRelabelings": [{"action": "drop", "regex": "python_info"}],
        },
    },
    "basic-auth-only": {**TOKEN, "webConfig": {"existingSecret": "exporter-web", "tls": False}},
    "network-policy": {**TOKEN, "networkPolicy": {"enabled": True}},
    "admin-tls": {**ADMIN, **WEB},
    "admin-network-policy": {
        **ADMIN,
        "networkPolicy": {
            "enabled": True,
            "admin": {"from": [{"podSelector": {"matchLabels": {"role": "oncall-tools"}}}]},
        },
    },
    "admin-insecure-accepted": {**ADMIN, "allowInsecureAdmin": True},
    "spread-and-pdb": {
        **TOKEN,
        "shards": 2,
        "replicasPerShard": 2,
        "podDisruptionBudget": {"maxUnavailable": 2},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
            }
        ],
    },
    "no-pdb": {**TOKEN, "podDisruptionBudget": {"enabled": False}},
    "name-override": {**EVERYTHING_ON, "nameOverride": "cdn"},
}


@pytest.mark.parametrize("values", COMBINATIONS.values(), ids=COMBINATIONS.keys())
def test_every_documented_combination_renders_valid_objects(values: dict[str, Any]) -> None:
    validate(render(values))


def test_every_combination_is_documented() -> None:
    """Each value the combinations set has its row in docs/deploy.md's table."""
    doc = (DEPLOY.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    for values in COMBINATIONS.values():
        for key in values:
            assert f"`{key}" in doc, key


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "secret.token is required: the platform's token"),
        ({"secret": {"username": "ops"}}, "secret.password is required with secret.username"),
        ({**ADMIN, **WEB, "secret": {"token": "t"}}, "secret.adminReadToken is required"),
        (
            {**ADMIN, **WEB, "secret": {"token": "t", "adminReadToken": "r"}},
            "secret.adminWriteToken is required",
        ),
    ],
)
def test_a_missing_credential_fails_the_install_naming_it(
    values: dict[str, Any], message: str
) -> None:
    assert message in refusal(values)


def test_credentials_are_files_named_by_the_config_never_environment_variables(
    tmp_path: Path,
) -> None:
    objects = render(COMBINATIONS["admin-tls"])
    container = pod(objects)["containers"][0]
    assert "envFrom" not in container
    assert not [
        e for e in container["env"] if e["name"].startswith("CDNVIDEO_") and "TOKEN" in e["name"]
    ]
    assert one(objects, "Secret")["stringData"] == {
        "token": "t0ken",
        "admin-read-token": "read-token-0123456",
        "admin-write-token": "write-token-0123456",
    }
    settings = pod_settings(objects, tmp_path)
    assert (settings.upstream.token, settings.admin.read_token, settings.admin.write_token) == (
        "t0ken",
        "read-token-0123456",
        "write-token-0123456",
    )
    login = render(COMBINATIONS["login"])
    assert one(login, "Secret")["stringData"] == {"password": "pa55"}
    (tmp_path / "login").mkdir()
    settings = pod_settings(login, tmp_path / "login")
    assert (settings.upstream.username, settings.upstream.password) == ("ops@example.com", "pa55")


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({**TOKEN, "shards": "two"}, "at '/shards': got string, want integer"),
        (
            {**TOKEN, "extraArgs": "--web.enable-lifecycle"},
            "at '/extraArgs': got string, want array",
        ),
        ({**TOKEN, "networkPolicy": {"enabled": "yes"}}, "at '/networkPolicy/enabled': got string"),
        ({**TOKEN, "image": {"digest": "latest"}}, "at '/image/digest'"),
        ({**TOKEN, "serviceMonitor": {"scheme": "tcp"}}, "at '/serviceMonitor/scheme'"),
        (
            {**TOKEN, "networkPolicies": {"enabled": True}},
            "additional properties 'networkPolicies'",
        ),
    ],
)
def test_the_values_schema_refuses_a_wrong_type(values: dict[str, Any], where: str) -> None:
    assert where in refusal(values)


def test_the_admin_api_without_tls_or_a_network_policy_is_refused_unless_accepted() -> None:
    assert "config.admin.enabled without TLS (webConfig.existingSecret) and without " in refusal(
        ADMIN
    )
    assert "allowInsecureAdmin=true" in refusal(ADMIN)
    assert "config.admin.enabled without TLS" in refusal(
        {**ADMIN, "webConfig": {"existingSecret": "web", "tls": False}}
    )
    for accepted in ("admin-tls", "admin-network-policy", "admin-insecure-accepted"):
        assert one(render(COMBINATIONS[accepted]), "StatefulSet")
    notes = notes_of(COMBINATIONS["admin-insecure-accepted"])
    assert "WARNING: the admin API is on without TLS and without a NetworkPolicy" in notes
    assert "WARNING" not in notes_of(COMBINATIONS["admin-tls"])


def notes_of(values: dict[str, Any]) -> str:
    with helm().Chart.load(CHART) as chart:
        manifests = chart.render(values, name="rel", namespace="monitoring")
    text: str = manifests["cdnvideo-exporter/templates/NOTES.txt"]
    return text


def test_notes_tell_how_to_reach_the_landing_page() -> None:
    notes = notes_of(TOKEN)
    assert "kubectl -n monitoring port-forward svc/rel-cdnvideo-exporter 9877" in notes
    assert "then open http://127.0.0.1:9877/" in notes
    assert "then open https://127.0.0.1:9877/" in notes_of({**TOKEN, **WEB})


def test_the_container_runs_the_exporter_without_a_shell_and_takes_extra_args() -> None:
    container = pod(render(COMBINATIONS["extras"]))["containers"][0]
    assert "command" not in container  # the image's ENTRYPOINT, cdnvideo-exporter
    assert container["args"] == [
        "run",
        "--config.file=/etc/cdnvideo-exporter/config/config.yml",
        "--web.enable-lifecycle",
        "--log.level=debug",
    ]
    assert container["env"][-1] == {"name": "TZ", "value": "UTC"}
    assert {"name": "ca", "mountPath": "/etc/corp-ca", "readOnly": True} in container[
        "volumeMounts"
    ]
    assert {"name": "ca", "configMap": {"name": "corp-ca"}} in pod(render(COMBINATIONS["extras"]))[
        "volumes"
    ]


def test_the_image_is_a_registry_path_with_the_app_version_or_pinned_by_digest() -> None:
    chart = load_yaml(CHART / "Chart.yaml")
    assert pod(render())["containers"][0]["image"] == (
        f"ghcr.io/cdnvideo/cdnvideo-exporter:{chart['appVersion']}"
    )
    digest = "sha256:" + "ab" * 32
    assert pod(render(COMBINATIONS["digest"]))["containers"][0]["image"] == (
        f"ghcr.io/cdnvideo/cdnvideo-exporter@{digest}"
    )


def test_a_web_config_serves_tls_and_the_service_monitor_and_probes_follow_it(
    tmp_path: Path,
) -> None:
    objects = render(COMBINATIONS["tls-and-basic-auth"])
    endpoint = one(objects, "ServiceMonitor")["spec"]["endpoints"][0]
    wanted = COMBINATIONS["tls-and-basic-auth"]["serviceMonitor"]
    assert endpoint["scheme"] == "https"
    for key in ("tlsConfig", "basicAuth", "relabelings", "metricRelabelings"):
        assert endpoint[key] == wanted[key], key
    container = pod(objects)["containers"][0]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS", probe
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["web"] == "/etc/cdnvideo-exporter/web"
    config = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yml"])
    assert config["web_config_file"] == "/etc/cdnvideo-exporter/web/web.yml"
    plain = render(COMBINATIONS["basic-auth-only"])
    assert pod(plain)["containers"][0]["readinessProbe"]["httpGet"]["scheme"] == "HTTP"
    assert one(render(EVERYTHING_ON), "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "http"


def test_the_network_policy_admits_metrics_and_admin_clients_separately() -> None:
    metrics_only = one(render(COMBINATIONS["network-policy"]), "NetworkPolicy")["spec"]
    assert metrics_only["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "cdnvideo-exporter",
        "app.kubernetes.io/instance": "rel",
    }
    assert [rule["from"] for rule in metrics_only["ingress"]] == [
        [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
            }
        ]
    ]
    with_admin = one(render(COMBINATIONS["admin-network-policy"]), "NetworkPolicy")["spec"]
    assert len(with_admin["ingress"]) == 2
    assert with_admin["ingress"][1]["from"] == [
        {"podSelector": {"matchLabels": {"role": "oncall-tools"}}}
    ]
    assert {p["port"] for rule in with_admin["ingress"] for p in rule["ports"]} == {"http"}
    assert "NetworkPolicy" not in [o["kind"] for o in render()]


def test_a_shards_copies_spread_over_nodes_and_drain_one_at_a_time() -> None:
    objects = render()
    (spread,) = pod(objects)["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert (
        spread["labelSelector"]["matchLabels"]
        == one(objects, "StatefulSet")["spec"]["selector"]["matchLabels"]
    )
    assert one(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    custom = render(COMBINATIONS["spread-and-pdb"])
    (zone,) = pod(custom)["topologySpreadConstraints"]
    assert zone["topologyKey"] == "topology.kubernetes.io/zone"
    assert zone["labelSelector"] == spread["labelSelector"]
    assert one(custom, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 2
    assert "PodDisruptionBudget" not in [o["kind"] for o in render(COMBINATIONS["no-pdb"])]


def test_the_service_publishes_unready_pods_so_an_outage_stays_scraped() -> None:
    services = [o for o in render() if o["kind"] == "Service"]
    assert [s["spec"]["publishNotReadyAddresses"] for s in services] == [True, True]


def test_alerts_follow_the_job_a_name_override_gives() -> None:
    objects = render(COMBINATIONS["name-override"])
    monitor = one(objects, "ServiceMonitor")
    service = next(o for o in objects if o["kind"] == "Service" and "clusterIP" not in o["spec"])
    job = service["metadata"]["labels"][monitor["spec"]["jobLabel"]]
    assert job == "cdn"
    rules = {
        r["alert"]: r
        for g in one(objects, "PrometheusRule")["spec"]["groups"]
        for r in g["rules"]
        if "alert" in r
    }
    down = rules["CdnvideoExporterDown"]
    assert down["expr"].strip() == 'up{job="cdn"} == 0 or absent(up{job="cdn"})'
    assert "{{ else }}any target of job cdn{{ end }}" in down["annotations"]["description"]
    assert 'job="cdnvideo-exporter"' not in json.dumps(rules)
