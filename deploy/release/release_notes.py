"""The release notes of a version tag: its CHANGELOG.md entry, after checking that the tag,
``exporter.__version__`` and the chart's ``appVersion`` name one version.

    python3 deploy/release/release_notes.py --tag v0.1.0 > notes.md

Exits 1 naming what disagrees (the release workflow stops before building anything). Reads the
files as text, so it runs with a bare Python and no dependencies installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHANGELOG = REPO / "CHANGELOG.md"
PACKAGE = REPO / "exporter" / "__init__.py"
CHART = REPO / "deploy" / "helm" / "cdnvideo-exporter" / "Chart.yaml"


def _field(path: Path, pattern: str) -> str:
    found = re.search(pattern, path.read_text(encoding="utf-8"), re.M)
    if found is None:
        raise SystemExit(f"{path.relative_to(REPO)}: no {pattern!r}")
    return found.group(1)


def version_problems(tag: str) -> list[str]:
    """What disagrees with the tag ``vX.Y.Z``; empty when the release may go ahead."""
    if not re.fullmatch(r"v\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?", tag):
        return [f"tag {tag!r} is not v<major>.<minor>.<patch>"]
    version = tag[1:]
    found = {
        "exporter.__version__": _field(PACKAGE, r'^__version__ = "([^"]+)"'),
        "Chart.yaml appVersion": _field(CHART, r'^appVersion: "?([^"\s]+)"?'),
    }
    problems = [
        f"{where} is {value}, the tag says {version}"
        for where, value in found.items()
        if value != version
    ]
    if not notes(version):
        problems.append(f"CHANGELOG.md has no entry '## [{version}]'")
    return problems


def notes(version: str) -> str:
    """The body of the CHANGELOG's ``## [version]`` entry (up to the next entry or the links)."""
    text = CHANGELOG.read_text(encoding="utf-8")
    start = re.search(rf"^## \[{re.escape(version)}\][^\n]*\n", text, re.M)
    if start is None:
        return ""
    end = re.search(r"^(## \[|\[[^\]]+\]: )", text[start.end() :], re.M)
    body = text[start.end() : start.end() + end.start()] if end else text[start.end() :]
    return body.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True, help="the pushed tag, e.g. v0.1.0")
    args = parser.parse_args(argv)
    problems = version_problems(args.tag)
    if problems:
        for problem in problems:
            print(f"release {args.tag}: {problem}", file=sys.stderr)
        return 1
    print(notes(args.tag[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
