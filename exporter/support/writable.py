"""Whether a file can be written where the config puts it, asked before anything counts on it.

``problem(path, create)`` names what stands in the way of writing ``path`` the way the state
files are written (a temporary file next to it, renamed over it), or None. With ``create`` the
missing directories on the way are made (mode 0750); without it (check-config) only whether
they could be made is asked. Both probe by writing: a permission bit says nothing of a
read-only mount or of /proc, a file created and removed does.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DIR_MODE = 0o750


def problem(path: str, create: bool) -> str | None:
    """What prevents writing ``path`` (None: nothing), after making its missing directories
    when ``create``. A path the system refuses to look at (a name longer than the file
    system takes) is such a problem, named, never an exception."""
    try:
        return _problem(path, create)
    except OSError as exc:
        return f"{exc.filename or path}: {exc.strerror or exc}"


def _problem(path: str, create: bool) -> str | None:
    target = Path(path)
    if target.is_dir():
        return f"{path} is a directory"
    parent = target.parent
    missing = _nearest_existing(parent)
    if not missing.is_dir():
        return f"{missing} is not a directory"
    if parent != missing:
        if not create:
            why = _probe(missing)
            return None if why is None else f"cannot create {parent}: {why}"
        try:
            parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            return f"cannot create {parent}: {exc.strerror or exc}"
    why = _probe(parent)
    if why is not None:
        return f"cannot write in {parent}: {why}"
    if target.exists() and not os.access(target, os.W_OK):
        return f"{path} is not writable"
    return None


def _nearest_existing(directory: Path) -> Path:
    """``directory`` or its nearest ancestor that exists."""
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    return directory


def _probe(directory: Path) -> str | None:
    """Create and remove a file in ``directory``: the error's text when that fails."""
    probe = directory / f".cdnvideo-exporter-probe-{os.getpid()}"
    try:
        with open(probe, "xb"):
            pass
    except FileExistsError:
        pass
    except OSError as exc:
        return str(exc.strerror or exc)
    with contextlib.suppress(OSError):
        probe.unlink()
    return None
