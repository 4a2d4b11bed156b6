"""Stamp the git revision and branch into the sdist and the wheel (exporter/support/_build.json).

Everything else about the build is in pyproject.toml. The stamp is what
``cdnvideo_exporter_build_info{revision, branch}`` shows; an editable install has none
(``unknown``). A wheel built from an sdist keeps the sdist's stamp.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

STAMP = Path("exporter", "support", "_build.json")


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def _stamp() -> str:
    """The stamp's text: from the environment, else git, else the sdist's own stamp."""
    revision = os.environ.get("CDNVIDEO_BUILD_REVISION") or _git("rev-parse", "HEAD")
    branch = os.environ.get("CDNVIDEO_BUILD_BRANCH") or _git("rev-parse", "--abbrev-ref", "HEAD")
    if not revision and STAMP.is_file():
        return STAMP.read_text(encoding="utf-8")
    return json.dumps({"revision": revision or "unknown", "branch": branch or "unknown"}) + "\n"


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            target = Path(self.build_lib, STAMP)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_stamp(), encoding="utf-8")


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        target = Path(base_dir, STAMP)
        if target.exists():
            target.unlink()  # a hard link to the checkout's copy, if any
        target.write_text(_stamp(), encoding="utf-8")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
