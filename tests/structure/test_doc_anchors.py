"""Code and docs cite a doc by a heading that exists, never by an item's number.

Every ``docs/<file>.md#<anchor>`` in exporter/, tests/, bench/, README.md, CHANGELOG.md and
docs/, and every Markdown link ``[...](<file>.md#<anchor>)`` or ``[...](#<anchor>)`` in the
Markdown files, names a heading of that file by GitHub's anchor rules; a doc cited by a title
(``docs/<file>.md, *Title*``, ``(*Title*)`` or ``"Title"``) has a heading that begins with it or
a bold lead-in (``**Title``) of a list item or paragraph. A citation of a numbered
item (``#optimisations, 4``, ``*Optimisations*, 24``, ``optimisation 22``) breaks silently when
the list is renumbered, so none is left: each item that is cited has a heading of its own.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = [p for top in ("exporter", "tests", "bench") for p in sorted((ROOT / top).rglob("*.py"))]
MARKDOWN = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# A doc named from the repository's root, as code and docs write it in prose.
_ROOTED = re.compile(r"(?<![\w/.-])(docs/[\w/.-]+\.md)#([\w-]+)")
# A Markdown link's target with an anchor: ``(file.md#anchor)`` or ``(#anchor)``.
_LINKED = re.compile(r"\]\(((?:[\w./-]+\.md)?)#([\w-]+)\)")
# A doc cited by a title: ``docs/x.md, *Title*``, ``docs/x.md (*Title*)``, ``docs/x.md, "Title"``.
_TITLED = re.compile(r'(?<![\w/.-])(docs/[\w/.-]+\.md)(?:,|\s\()\s*(?:\*([^*\n]+)\*|"([^"\n]+)")')
_NUMBERED = re.compile(
    r"""
      \.md\#[\w-]+(?![\w-]),?\s*\(?\d{1,2}(?!\d)  # docs/performance.md#optimisations, 4  /  (18)
    | \*Optimisations\*,\s*\d            # docs/performance.md, *Optimisations*, 24
    | \b[Oo]ptimisations?\s\d            # optimisation 22, optimisations 13-20
    """,
    re.X,
)


def anchor(title: str) -> str:
    """GitHub's anchor of a heading: its text lower-cased, link targets and punctuation
    dropped (letters, digits, ``_`` and ``-`` kept), each space a hyphen."""
    text = _LINK_TEXT.sub(r"\1", title).strip().lower()
    return re.sub(r" ", "-", re.sub(r"[^\w\- ]", "", text))


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings, a repeated one numbered as GitHub does
    (``x``, ``x-1``, ``x-2``), headings inside fenced code left out."""
    seen: Counter[str] = Counter()
    found = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            continue
        base = anchor(heading.group(1))
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return found


def citations(path: Path) -> list[tuple[int, Path, str]]:
    """(line, cited file, anchor) of every anchored citation of a doc in ``path``."""
    text = path.read_text(encoding="utf-8")
    found = [(m.start(), ROOT / m.group(1), m.group(2)) for m in _ROOTED.finditer(text)]
    if path.suffix == ".md":
        for m in _LINKED.finditer(text):
            target = (path.parent / m.group(1)).resolve() if m.group(1) else path
            found.append((m.start(), target, m.group(2)))
    return sorted((text.count("\n", 0, at) + 1, target, name) for at, target, name in found)


def titled(path: Path) -> list[tuple[int, Path, str]]:
    """(line, cited file, title) of every citation of a doc by a title in ``path``."""
    text = path.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 1, ROOT / m.group(1), m.group(2) or m.group(3))
        for m in _TITLED.finditer(text)
    ]


def has_title(text: str, title: str) -> bool:
    """Whether a Markdown text has a heading that begins with ``title`` or a bold lead-in."""
    wanted = title.strip().lower()
    heads = (m.group(1).lower() for m in map(_HEADING.match, text.splitlines()) if m)
    return any(head.startswith(wanted) for head in heads) or f"**{title.strip()}" in text


def numbered(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every citation of a numbered item in ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, line.strip()) for n, line in enumerate(lines, 1) if _NUMBERED.search(line)]


def _broken(paths: list[Path]) -> list[str]:
    headings: dict[Path, set[str]] = {}
    broken = []
    for path in paths:
        for line, target, name in citations(path):
            if target not in headings:
                exists = target.is_file()
                headings[target] = anchors(target.read_text("utf-8")) if exists else set()
            if name not in headings[target]:
                where = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
                broken.append(f"{path.relative_to(ROOT)}:{line}: {where}#{name}")
    return broken


def test_every_cited_anchor_is_a_heading_of_its_doc() -> None:
    assert len(CODE) > 300, "the scan found too few modules"
    assert len(MARKDOWN) > 15, "the scan found too few docs"
    assert _broken(CODE + MARKDOWN) == []


def test_every_cited_title_is_a_heading_or_a_lead_in_of_its_doc() -> None:
    missing = [
        f"{path.relative_to(ROOT)}:{line}: {target.relative_to(ROOT)}, *{title}*"
        for path in CODE + MARKDOWN
        if path != Path(__file__).resolve()
        for line, target, title in titled(path)
        if not target.is_file() or not has_title(target.read_text("utf-8"), title)
    ]
    assert missing == []


def test_no_code_or_doc_cites_a_numbered_item() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for path in CODE + MARKDOWN
        if path != Path(__file__).resolve()
        for line, text in numbered(path)
    ]
    assert found == [], "cite the item's heading instead:\n" + "\n".join(found)


def test_anchors_follow_githubs_rules() -> None:
    text = (
        "# Title\n## Each fragment compressed once; gzip pieces joined\n"
        "### scrape / floor from pairs\n### A 0.2 ms switch interval\n"
        "### A plain `/metrics` body, [linked](x.md)\n```sh\n# not a heading\n```\n"
        "## Title\n## Title\n"
    )
    assert anchors(text) == {
        "title",
        "each-fragment-compressed-once-gzip-pieces-joined",
        "scrape--floor-from-pairs",
        "a-02-ms-switch-interval",
        "a-plain-metrics-body-linked",
        "title-1",
        "title-2",
    }


def test_the_scan_finds_a_broken_anchor_and_a_numbered_item(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "guide.md"
    doc.parent.mkdir()
    doc.write_text("# Guide\n## Kept heading\n", encoding="utf-8")
    code = tmp_path / "mod.py"
    code.write_text(
        "# docs/guide.md" + "#kept-heading is fine; docs/guide.md" + "#gone is not\n"
        "# see docs/guide.md" + "#optimisations, 4 and optimisation" + " 22\n"
        "# docs/guide.md" + "#kept-heading, 1000 resources: a figure, not an item\n",
        encoding="utf-8",
    )
    cited = [(line, name) for line, _, name in citations(code)]
    assert cited == [(1, "gone"), (1, "kept-heading"), (2, "optimisations"), (3, "kept-heading")]
    assert [line for line, _ in numbered(code)] == [2]
    assert anchors(doc.read_text("utf-8")) == {"guide", "kept-heading"}
    guide = "# Guide\n## Kept heading: and more\n- **A lead-in.** Text.\n"
    assert has_title(guide, "Kept heading")
    assert has_title(guide, "A lead-in")
    assert not has_title(guide, "Gone")
    code.write_text('# docs/guide.md, *Kept heading*; docs/guide.md (*Gone*), docs/guide.md, "X"\n')
    assert [title for _, _, title in titled(code)] == ["Kept heading", "Gone", "X"]
