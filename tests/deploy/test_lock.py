"""requirements.lock (what the image and ``make demo`` install) agrees with pyproject.toml:
every runtime dependency pinned inside its range with hashes, nothing pinned that the project
does not need, made by the Makefile's ``lock`` command; the Dockerfile and the Makefile
install from it with ``--require-hashes``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.deploy.deploy_helpers import REPO

LOCK = REPO / "requirements.lock"
PROJECT = "cdnvideo-exporter (pyproject.toml)"


@dataclass
class Pin:
    version: Version
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def pins() -> dict[str, Pin]:
    """Name -> pin, from the pip-compile format (``name==v \\``, ``--hash=...``, ``# via``)."""
    out: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        pinned = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+?)\s*\\?", line)
        if pinned:
            current = out[canonicalize_name(pinned.group(1))] = Pin(Version(pinned.group(2)))
            in_via = False
        elif current is not None and stripped.startswith("--hash=sha256:"):
            current.hashes.append(stripped.removeprefix("--hash=sha256:").rstrip(" \\"))
        elif current is not None and stripped.startswith("# via"):
            rest = stripped.removeprefix("# via").strip()
            in_via = not rest
            if rest:
                current.via.append(rest)
        elif current is not None and in_via and stripped.startswith("#   "):
            current.via.append(stripped.removeprefix("#   ").strip())
    return out


def dependencies() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return [Requirement(text) for text in project["project"]["dependencies"]]


def test_every_runtime_dependency_is_pinned_inside_its_range() -> None:
    locked = pins()
    for req in dependencies():
        name = canonicalize_name(req.name)
        assert name in locked, f"{req} is not in requirements.lock: run make lock"
        assert req.specifier.contains(locked[name].version, prereleases=True), (
            f"requirements.lock pins {name}=={locked[name].version} outside {req}: run make lock"
        )
        assert PROJECT in locked[name].via, name


def test_every_pin_has_hashes_and_is_needed_by_the_project() -> None:
    locked = pins()
    assert len(locked) >= len(dependencies())
    for name, pin in locked.items():
        assert pin.hashes, f"{name} has no hash"
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in pin.hashes), name
        seen, todo = set(), [name]
        while todo:  # follow "via" up to the project: nothing is pinned for nothing
            here = todo.pop()
            seen.add(here)
            parents = locked[here].via if here in locked else []
            if PROJECT in parents:
                break
            todo += [canonicalize_name(p) for p in parents if canonicalize_name(p) not in seen]
        else:
            raise AssertionError(f"{name} is pinned but nothing of the project needs it")


def test_the_lock_is_made_by_the_makefile_command() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    command = re.search(r"^LOCK_COMMAND := pip-compile (.+)$", makefile, re.M)
    assert command is not None
    header = re.search(r"^#    pip-compile (.+)$", LOCK.read_text(encoding="utf-8"), re.M)
    assert header is not None
    assert sorted(header.group(1).split()) == sorted(command.group(1).split())
    assert "--generate-hashes" in command.group(1)


def test_the_image_and_the_demo_install_the_lock_with_hashes() -> None:
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY requirements.lock ./" in dockerfile
    assert re.search(r"pip install [^\n]*--require-hashes [^\n]*-r requirements\.lock", dockerfile)
    assert re.search(r"pip install [^\n]*--no-deps [^\n]*\.", dockerfile)  # nothing resolved again
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "$(BIN)/pip install --quiet --require-hashes -r requirements.lock" in makefile
    assert "$(BIN)/pip install --quiet --no-deps -e ." in makefile
    ignore = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "!requirements.lock" in ignore
