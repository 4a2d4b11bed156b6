"""What build this is: the version, and the git revision and branch stamped at build time.

``python -m build`` (setup.py) writes ``exporter/support/_build.json`` into the sdist and the
wheel from ``git`` (or the ``CDNVIDEO_BUILD_REVISION`` / ``CDNVIDEO_BUILD_BRANCH`` variables, as a
Docker build passes them); an editable install or a plain checkout has no such file, so both
read ``unknown``.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from pathlib import Path

from exporter import __version__

STAMP = Path(__file__).with_name("_build.json")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class BuildInfo:
    version: str
    revision: str
    branch: str
    pythonversion: str


def build_info(stamp: Path = STAMP) -> BuildInfo:
    """The labels of ``cdnvideo_exporter_build_info``."""
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    revision = data.get("revision")
    branch = data.get("branch")
    return BuildInfo(
        version=__version__,
        revision=revision if isinstance(revision, str) and revision else UNKNOWN,
        branch=branch if isinstance(branch, str) and branch else UNKNOWN,
        pythonversion=platform.python_version(),
    )
