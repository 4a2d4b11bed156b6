"""Tests are built from one rig (docs/dev/testing.md, *One rig*): the daemon is started in one
place, tests/rig/daemon.py, and every fake platform the rig holds beside the simulator is named
where docs/dev/testing.md says why a test needs it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
RIG = TESTS / "rig"
TESTING = ROOT / "docs" / "dev" / "testing.md"
STARTS = "tests/rig/daemon.py"


def _calls(path: Path, name: str) -> list[int]:
    """The lines of ``path`` that call ``name`` (by itself or as an attribute)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called == name:
                lines.append(node.lineno)
    return lines


def test_only_the_rig_builds_the_daemon() -> None:
    by_hand = [
        f"{path.relative_to(ROOT).as_posix()}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.relative_to(ROOT).as_posix() != STARTS
        for line in _calls(path, "create_app")
    ]
    assert by_hand == [], (
        f"start the daemon with {STARTS}'s `running` or the `start_daemon` fixture "
        f"(docs/dev/testing.md, *One rig*), not by hand: {by_hand}"
    )


def test_every_fake_of_the_rig_is_justified_in_the_testing_doc() -> None:
    text = TESTING.read_text(encoding="utf-8")
    section = re.search(r"^## One rig\n(.*?)(?=^## )", text, re.S | re.M)
    assert section is not None, f"{TESTING.relative_to(ROOT)} has no section '## One rig'"
    fakes = {
        f"{path.stem}.{node.name}"
        for path in sorted(RIG.glob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef) and node.name.startswith("Fake")
    }
    unnamed = sorted(f for f in fakes if f"`{f.split('.')[1]}`" not in section.group(1))
    assert unnamed == [], f"say in docs/dev/testing.md, *One rig*, why tests need {unnamed}"
