"""The platform's traffic field names are written once; the simulator and the parser read it."""

from __future__ import annotations

import ast
from pathlib import Path

import exporter
from exporter.simulator import traffic_model, traffic_window
from exporter.support import platform_fields
from exporter.traffic import families, parse

PACKAGE = Path(exporter.__file__).parent
NAMES = {"STATUS_CODES", "SIZE_RANGES", "SIDES"}


def _assigned_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def test_status_codes_and_size_ranges_are_assigned_in_one_module_only() -> None:
    where = {
        str(path.relative_to(PACKAGE.parent)): sorted(_assigned_names(path) & NAMES)
        for path in sorted(PACKAGE.rglob("*.py"))
        if _assigned_names(path) & NAMES
    }
    assert where == {"exporter/support/platform_fields.py": sorted(NAMES)}


def test_simulator_and_parser_read_the_same_objects() -> None:
    assert traffic_model.STATUS_CODES is parse.STATUS_CODES is platform_fields.STATUS_CODES
    assert traffic_model.SIZE_RANGES is parse.SIZE_RANGES is platform_fields.SIZE_RANGES
    assert traffic_window.SIDES is families.SIDES is platform_fields.SIDES


def test_the_simulators_columns_are_the_keys_the_parser_reads() -> None:
    parsed = set(parse.READ_COUNT_KEYS) | set(parse.GAUGE_KEYS)
    assert set(traffic_window.COLUMN_KEYS) == parsed
    assert len(platform_fields.STATUS_CODES) == 22
    assert len(platform_fields.SIZE_RANGES) == 8
