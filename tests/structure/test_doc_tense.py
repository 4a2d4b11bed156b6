"""The docs say what is; history goes to CHANGELOG.md.

Every Markdown file of docs/, docs/dev/ and README.md is read as one text (a phrase broken
across lines is still found) and fails, naming file:line, on the plainest markers of history:
an issue cited by its number, "as before", "used to" (unless it is the present passive "is
used to"), "previously" and a former value in brackets ("(was 5"). CHANGELOG.md is where an
issue's number and what changed belong, so it is not read.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS += sorted((ROOT / "docs" / "dev").glob("*.md"))

HISTORY = re.compile(
    r"""
      \bissues?\s+\#?\d+                           # issue 48, issues 48
    | \bas\s+before\b
    | (?<!\bis\s)(?<!\bare\s)(?<!\bbe\s)\bused\s+to\b  # "tests used to bound", not "is used to"
    | \bpreviously\b
    | \(was\s+\d                                   # 300 (was 240)
    """,
    re.X | re.I,
)

# Matches that are present tense in their context: (path from the root, the matched text as it
# stands, whitespace made single spaces), each with its reason. Keep it short.
ALLOWED: dict[tuple[str, str], str] = {}


def history(text: str) -> list[tuple[int, str]]:
    """(line, matched phrase) of every history marker in a Markdown text."""
    found = []
    for m in HISTORY.finditer(text):
        phrase = " ".join(m.group(0).split())
        found.append((text.count("\n", 0, m.start()) + 1, phrase))
    return found


def test_no_doc_narrates_history() -> None:
    assert len(DOCS) > 15, "the scan found too few docs"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {phrase!r}"
        for path in DOCS
        for line, phrase in history(path.read_text(encoding="utf-8"))
        if (str(path.relative_to(ROOT)), phrase) not in ALLOWED
    ]
    assert found == [], (
        "say what is; what changed, and which issue asked, goes to CHANGELOG.md:\n"
        + "\n".join(found)
    )


def test_the_scan_finds_each_marker_across_lines() -> None:
    text = (
        "Polls every 15 s (was 30 s), as\nbefore; see issue\n48.\n"
        "The cache used to hold 10 entries; previously none.\n"
        "The key is used to sign; the keys are used to sign; a flag can be used to stop.\n"
        "Issues 12 and 13 are in CHANGELOG.md.\n"
    )
    assert history(text) == [
        (1, "(was 3"),
        (1, "as before"),
        (2, "issue 48"),
        (4, "used to"),
        (4, "previously"),
        (6, "Issues 12"),
    ]
