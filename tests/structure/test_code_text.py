"""Code states invariants; docs/performance.md and CHANGELOG.md hold figures and history.

A measurement in a docstring or comment goes stale unseen. These tests read every comment and
docstring of exporter/ and fail, naming file:line, on a benchmark figure or a history phrase;
the code links to docs/performance.md instead, and every such link must name a heading there.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "exporter"

# What reads as a measurement or as history in code text. A duration under a second, a size in
# kB/MB, an approximate number, a ratio or a percentage with a comparison, a before -> after
# pair, the benchmark's own words, a "was ... now". Seconds, minutes and plain percentages are
# not matched: in this code they are settings and protocol limits ("30 s, then twice as long",
# "up to 20 % jitter"), which are invariants.
MEASUREMENT = re.compile(
    r"""
      \d[\d,.]*\s?(?:ms|us|µs|ns)\b                              # 20 ms, 100 us
    | \d[\d,.]*\s?(?:kB|KB|KiB|MB|MiB|GB|GiB)\b                  # 300 kB, 45 MB
    | ~\s?\d                                                     # ~7, ~45,000 objects
    | \d[\d,.]*\s?(?:x|×)\s?(?:faster|slower|more|less|fewer|larger|smaller)\b
    | \d\.\d+x\b                                                 # 2.5x
    | \d[\d,.]*\s?%\s(?:more|less|fewer|faster|slower|larger|smaller|off|cheaper)\b
    | \d[\d,.]*\s?(?:ms|s|MB|kB|%)?\s?->\s?\d                    # 222 -> 154 MB
    | \b(?:measured|benchmarked|profiled)\s(?:on|in|with|against)\b
    | \bin-process\b | \bon\sthis\smachine\b | \bat\s[\d,]+\sresources\b
    | \bwas\b[^.;]{0,80}\bnow\b | \bused\sto\b
    | \bbefore\sthis\s(?:change|commit|fix|optimi[sz]ation|issue)\b
    """,
    re.X,
)

# Matches that are invariants, not measurements: (path under exporter/, text on the line), each
# with its reason. Keep it short: a new entry needs a reason a reviewer agrees with.
ALLOWED: dict[tuple[str, str], str] = {
    ("web/webconfig.py", "``250ms``"): "an example of the Go duration syntax the parser reads",
    ("upstream/auth.py", "a 6-hour token renews after ~5 hours"): "RENEW_AT_FRACTION's arithmetic",
}

LINK = re.compile(r"docs/([\w/-]+\.md)#([\w-]+)")


def code_text(source: str) -> list[tuple[int, str]]:
    """(line number, text) of every comment and every docstring line of a module."""
    lines: list[tuple[int, str]] = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    source_lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            end = first.end_lineno or first.lineno
            lines.extend((n, source_lines[n - 1]) for n in range(first.lineno, end + 1))
    return sorted(lines)


def _scanned() -> list[tuple[str, Path]]:
    files = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        files.append((rel, path))
    return files


def figures(rel: str, source: str) -> list[str]:
    """``exporter/<rel>:<line>: <text>`` for each line of code text that carries a figure."""
    found = []
    for number, text in code_text(source):
        if not MEASUREMENT.search(text):
            continue
        if any(rel == path and part in text for (path, part) in ALLOWED):
            continue
        found.append(f"exporter/{rel}:{number}: {text.strip()}")
    return found


def test_no_comment_or_docstring_carries_a_measurement_or_history() -> None:
    scanned = _scanned()
    found = [line for rel, path in scanned for line in figures(rel, path.read_text("utf-8"))]
    assert len(scanned) > 100, "the scan found too few modules"
    assert found == [], (
        "figures and history belong in docs/performance.md or CHANGELOG.md; the code keeps one "
        "sentence of why and a link (docs/performance.md#<heading>):\n" + "\n".join(found)
    )


def test_the_scan_finds_figures_in_comments_and_docstrings_only() -> None:
    source = '''"""A module.

Rendering takes 394 -> 172 ms at 1000 resources.
"""
LIMIT = "20 ms"  # the render was 2.5x faster


def f() -> None:
    """The loop was blocked ~12 ms, now it is not."""
    x = "45 MB"
'''
    assert [line.split(": ", 1)[0] for line in figures("demo.py", source)] == [
        "exporter/demo.py:3",
        "exporter/demo.py:5",
        "exporter/demo.py:9",
    ]


def test_the_scan_lets_invariants_through() -> None:
    source = '''"""Retries after 30 s, then twice as long, with up to 20 % jitter; 5 x interval old.

At most ``MAX`` requests in any 60 seconds; see docs/performance.md#json-a-piece-at-a-time.
"""
'''
    assert figures("demo.py", source) == []


def _headings(doc: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings."""
    anchors = set()
    for line in doc.read_text("utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return anchors


def test_every_link_from_code_to_the_docs_names_a_heading() -> None:
    broken = []
    for rel, path in _scanned():
        for number, text in code_text(path.read_text("utf-8")):
            for doc, anchor in LINK.findall(text):
                target = ROOT / "docs" / doc
                if not target.exists() or anchor not in _headings(target):
                    broken.append(f"exporter/{rel}:{number}: docs/{doc}#{anchor}")
    assert broken == [], "links to no heading:\n" + "\n".join(broken)
