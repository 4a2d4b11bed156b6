"""The README's layout section names every package folder, and the package root holds only the
entry point: a newcomer reading folder names sees the layers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "exporter"


def _layout_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Layout\n(.*?)^## ", readme + "\n## ", re.S | re.M)
    assert match is not None, "README.md has no '## Layout' section"
    return match.group(1)


def test_every_package_folder_is_in_the_readme_layout() -> None:
    folders = sorted(
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    )
    section = _layout_section()
    missing = [name for name in folders if f"exporter/{name}/" not in section]
    assert folders, "no package folders found"
    assert missing == [], f"README.md's layout section does not name: {missing}"


def test_the_readme_layout_names_no_folder_that_is_gone() -> None:
    named = set(re.findall(r"exporter/([a-z_]+)/", _layout_section()))
    gone = sorted(name for name in named if not (PACKAGE / name / "__init__.py").exists())
    assert named, "the layout section names no exporter/ folder"
    assert gone == [], f"README.md's layout section names folders that do not exist: {gone}"


def test_the_package_root_holds_only_the_entry_point() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "cli.py"]
