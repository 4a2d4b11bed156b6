"""docs/reliability.md carries the fault matrix exactly as matrix.py defines it.

Regenerate the block with
``UPDATE_RELIABILITY_DOC=1 pytest tests/reliability/test_reliability_doc.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .matrix import BEGIN, END, markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"


def test_reliability_doc_shows_the_matrix() -> None:
    text = DOC.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END + "\n")
    assert rest, f"{DOC} has no {BEGIN} block"
    fresh = head + markdown() + tail
    if os.environ.get("UPDATE_RELIABILITY_DOC"):
        DOC.write_text(fresh, encoding="utf-8")
    assert text == fresh, "the matrix in docs/reliability.md is stale (see this module's doc)"
