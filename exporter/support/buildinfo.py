"""What build this is: the version, and the git revision and branch stamped at build time.

``python -m build`` (setup.py) writes ``exporter/support/_build.json`` into the sdist and the
wheel from ``git`` (or the ``CDNVIDEO_BUILD_REVISION`` / ``CDNVIDEO_BUILD_BRANCH`` variables, as a
Docker build passes them). An editable install or a plain checkout has no such file: when the
package runs from a git checkout, ``git`` in that checkout tells the revision and branch (as
``--version`` of a Go exporter built from a checkout does); otherwise both read ``unknown``.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from exporter import __version__

STAMP = Path(__file__).with_name("_build.json")
CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root, when run from one
UNKNOWN = "unknown"
GIT_SECONDS = 5.0


@dataclass(frozen=True)
class BuildInfo:
    version: str
    revision: str
    branch: str
    pythonversion: str


def build_info(stamp: Path = STAMP, checkout: Path = CHECKOUT) -> BuildInfo:
    """The labels of ``cdnvideo_exporter_build_info``: the stamp's, else the checkout's."""
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        data = from_git(checkout)
    revision = data.get("revision")
    branch = data.get("branch")
    return BuildInfo(
        version=__version__,
        revision=revision if isinstance(revision, str) and revision else UNKNOWN,
        branch=branch if isinstance(branch, str) and branch else UNKNOWN,
        pythonversion=platform.python_version(),
    )


@functools.lru_cache(maxsize=4)
def from_git(checkout: Path) -> dict[str, str]:
    """``{"revision", "branch"}`` of the git checkout the package runs from; empty when it does
    not run from one (no ``.git`` beside ``pyproject.toml``) or git cannot tell."""
    if not ((checkout / ".git").exists() and (checkout / "pyproject.toml").is_file()):
        return {}
    out: dict[str, str] = {}
    for key, args in (
        ("revision", ["rev-parse", "HEAD"]),
        ("branch", ["branch", "--show-current"]),
    ):
        try:
            done = subprocess.run(
                ["git", "-C", str(checkout), *args],
                capture_output=True,
                text=True,
                timeout=GIT_SECONDS,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return {}
        out[key] = done.stdout.strip()
    return out
