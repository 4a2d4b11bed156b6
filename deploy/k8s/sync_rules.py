#!/usr/bin/env python3
"""Write prometheusrule.yaml and the Helm chart's files/rules.yml from deploy/prometheus/rules.yml
(the one source of the alerts).

    python deploy/k8s/sync_rules.py          # rewrite both
    python deploy/k8s/sync_rules.py --check  # exit 1 if either is out of date

Neither kustomize nor Helm can read files outside their directory, so the PrometheusRule and
the chart keep copies of the rule groups; tests/deploy checks that the copies and the source
agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "prometheus" / "rules.yml"
TARGET = HERE / "prometheusrule.yaml"
CHART_COPY = HERE.parent / "helm" / "cdnvideo-exporter" / "files" / "rules.yml"

HEADER = """\
# GENERATED from deploy/prometheus/rules.yml by deploy/k8s/sync_rules.py: edit the source,
# then run the script. Your Prometheus must select this object: with kube-prometheus-stack add
# its release label in an overlay (release: <helm release name>).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: cdnvideo-exporter
  labels:
    app.kubernetes.io/name: cdnvideo-exporter
spec:
"""


def render(source_text: str) -> str:
    """The PrometheusRule manifest: the source from its `groups:` line on, under `spec:`."""
    lines = source_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("groups:"))
    body = "\n".join(f"  {line}" if line.strip() else "" for line in lines[start:])
    return HEADER + body + "\n"


def main(argv: list[str]) -> int:
    source = SOURCE.read_text(encoding="utf-8")
    wanted = {TARGET: render(source), CHART_COPY: source}
    if "--check" in argv:
        stale = [t for t, text in wanted.items() if t.read_text(encoding="utf-8") != text]
        for target in stale:
            print(f"{target} is out of date; run python {Path(__file__).name}", file=sys.stderr)
        return 1 if stale else 0
    for target, text in wanted.items():
        target.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
