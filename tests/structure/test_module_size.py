"""The traffic area and the upstream transport stay deep, not wide: no module of
exporter/traffic/ or exporter/upstream/ is over ``MAX_LINES`` lines; one that grows past it is
split where it holds two jobs, each part a module with one job."""

from __future__ import annotations

from pathlib import Path

import exporter

PACKAGE = Path(exporter.__file__).resolve().parent
ROOT = PACKAGE.parent
HELD = ("traffic", "upstream")
MAX_LINES = 450


def _lines() -> dict[str, int]:
    """Lines of each module of the held packages, by path from the repository root."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in HELD
        for path in sorted((PACKAGE / package).rglob("*.py"))
    }


def test_no_module_of_traffic_or_upstream_is_over_the_limit() -> None:
    lines = _lines()
    assert lines, "no modules found"
    over = {m: n for m, n in lines.items() if n > MAX_LINES}
    assert over == {}, (
        f"over {MAX_LINES} lines: {over}; split each where it holds two jobs "
        "(docs/dev/architecture.md, The traffic area)"
    )
