#!/usr/bin/env python3
"""Write prometheusrule.yaml from deploy/prometheus/rules.yml (the one source of the alerts).

    python deploy/k8s/sync_rules.py          # rewrite prometheusrule.yaml
    python deploy/k8s/sync_rules.py --check  # exit 1 if it is out of date

kustomize cannot read files outside its directory, so the PrometheusRule keeps a copy of the
rule groups; tests/deploy checks that the copy and the source agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "prometheus" / "rules.yml"
TARGET = HERE / "prometheusrule.yaml"

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
    text = render(SOURCE.read_text(encoding="utf-8"))
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of date; run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
