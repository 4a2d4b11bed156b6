"""No doc cites a file the repository lacks: every path README.md and docs/ name (a
repository folder's path, another path with a file's extension, a Markdown file's name) is
found from the root, the doc's own folder, exporter/ or tests/ (where the docs name modules
and tests by their path inside the package), or is listed below with why it is not there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# Paths the docs name that are made outside the repository, each with who makes it.
MADE_ELSEWHERE = {
    "deploy/compose/.env": "the reader, holding the platform token for compose",
    "bench/out/results.md": "make bench, its output",
    "api/restream/restream_create.py": "openapi-python-client, a generated client's module",
    "overlays/production/kustomization.yaml": "the reader's own kustomize overlay",
}

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
_EXT = r"(?:md|py|ya?ml|json|prom|toml|lock|service|png|sh|cfg|ini|txt|j2|tpl)"
_OPEN = r"(?<![\w/.$<{*:~-])"  # not inside a longer path, a variable or a placeholder
_TOP = r"(?:exporter|tests|docs|deploy|dashboards|bench|\.github|\.ci)/"
_CITES = (
    re.compile(rf"{_OPEN}({_TOP}(?:[\w.-]+/)*[\w.-]*[\w/])(?![\w*{{<-])"),
    re.compile(rf"{_OPEN}((?:\.?[\w-]+/)+[\w-]+(?:\.[\w-]+)*\.{_EXT})(?![\w/*-])"),
    re.compile(rf"{_OPEN}([\w-]+\.md)(?![\w/*-])"),
)


def cited(path: Path) -> list[tuple[int, str]]:
    """(line, path) of every repository path ``path`` names (URLs left out)."""
    text = path.read_text(encoding="utf-8")
    plain = _URL.sub(lambda url: " " * len(url.group()), text)
    found = {
        (m.start(1), m.group(1).rstrip(".")) for pattern in _CITES for m in pattern.finditer(plain)
    }
    return sorted((text.count("\n", 0, start) + 1, name) for start, name in found)


def test_every_path_the_docs_cite_is_in_the_repository() -> None:
    missing = [
        f"{doc.relative_to(ROOT)}:{line}: {name}"
        for doc in DOCS
        for line, name in cited(doc)
        if name not in MADE_ELSEWHERE
        and not any(
            (base / name).exists() for base in (ROOT, doc.parent, ROOT / "exporter", ROOT / "tests")
        )
    ]
    assert missing == []


def test_the_scan_finds_a_missing_file_in_each_shape(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "As PRODUCT.md says, see `docs/nowhere.md` and [the rules](deploy/no/rules.yml);\n"
        "the module traffic/nothing.py, not http://example.com/x/y.md or $DIR/file.yml.\n",
        encoding="utf-8",
    )
    assert cited(doc) == [
        (1, "PRODUCT.md"),
        (1, "deploy/no/rules.yml"),
        (1, "docs/nowhere.md"),
        (2, "traffic/nothing.py"),
    ]


def test_what_is_made_elsewhere_is_still_cited() -> None:
    named = {name for doc in DOCS for _, name in cited(doc)}
    assert sorted(set(MADE_ELSEWHERE) - named) == []
