"""The release a user installs: ``python -m build`` makes an sdist and a wheel, ``twine check``
passes, and the wheel installed into a fresh venv runs ``--version`` and ``check-config``.

Needs PyPI (the build backend and the runtime dependencies are fetched, as a user's install
would); about 30 s.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from exporter import __version__

# One worker builds the release once for all of them (the module fixture ``release``).
pytestmark = pytest.mark.xdist_group("release")

REPO = Path(__file__).resolve().parents[2]
NAME = "cdnvideo_exporter"


@dataclass(frozen=True)
class Release:
    sdist: Path
    wheel: Path
    venv: Path
    workdir: Path  # outside the repository, so nothing is imported from the checkout

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / "cdnvideo-exporter"), *args],
            capture_output=True,
            text=True,
            cwd=self.workdir,
            env={"PATH": "/usr/bin:/bin"},
            timeout=60,
        )


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, (
        f"{args}: {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """Built once a session: the first worker to ask builds it under the session's shared
    temporary directory, the others wait on the lock and take it. Two builds at once from
    the one checkout collide in its build directories (``xdist_group`` is not enough: a
    worker may set a module fixture up again, and loadgroup was seen to split a group)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' bases share this parent
        base = base.parent
    with open(base / "release.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tmp = base / "release"
        done = tmp / "built"
        if not done.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # a build that failed half-way
            tmp.mkdir()
            _build(tmp)
            done.touch()
    (sdist,) = (tmp / "dist").glob("*.tar.gz")
    (wheel,) = (tmp / "dist").glob("*.whl")
    return Release(sdist, wheel, tmp / "venv", tmp / "work")


def _build(tmp: Path) -> None:
    """The sdist and the wheel in ``tmp/dist``, the wheel installed in ``tmp/venv``."""
    dist = tmp / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], tmp)
    (wheel,) = dist.glob("*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp)
    _run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheel),
        ],
        tmp,
    )
    (tmp / "work").mkdir()


def test_build_makes_an_sdist_and_a_wheel_of_the_version(release: Release) -> None:
    assert release.sdist.name == f"{NAME}-{__version__}.tar.gz"
    assert release.wheel.name == f"{NAME}-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(release.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"{NAME}-{__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {__version__}\n" in metadata
    assert "\nRequires-Dist: bcrypt" in metadata
    assert "exporter/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)[-8:]
    assert not any(n.startswith("tests/") for n in names)
    with zipfile.ZipFile(release.wheel) as wheel:
        stamp = json.loads(wheel.read("exporter/support/_build.json"))
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO)
    assert stamp["revision"] == head.stdout.strip()  # cdnvideo_exporter_build_info{revision}
    with tarfile.open(release.sdist) as sdist:
        members = {m.split("/", 1)[1] for m in sdist.getnames() if "/" in m}
    assert {"README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml"} <= members


def test_twine_check_passes(release: Release) -> None:
    done = _run(
        [sys.executable, "-m", "twine", "check", str(release.sdist), str(release.wheel)], REPO
    )
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_installed_wheel_runs_version_and_check_config(release: Release) -> None:
    version = release.run("--version")
    assert version.returncode == 0
    first = version.stdout.splitlines()[0]  # the wheel's stamp: the checkout it was built from
    assert re.fullmatch(
        rf"cdnvideo-exporter, version {re.escape(__version__)} "
        r"\(branch: \S+, revision: [0-9a-f]{40}\)",
        first,
    ), first
    where = subprocess.run(
        [str(release.venv / "bin" / "python"), "-c", "import exporter; print(exporter.__file__)"],
        capture_output=True,
        text=True,
        cwd=release.workdir,
        check=True,
    )
    assert where.stdout.startswith(str(release.venv)), where.stdout  # not the checkout
    config = release.workdir / "config.yml"
    config.write_text(
        "upstream:\n  token: release-test-token\naccounts: [demo-media]\n", encoding="utf-8"
    )
    checked = release.run("check-config", "--config", str(config))
    assert checked.returncode == 0, checked.stderr
    shown = yaml.safe_load(checked.stdout)
    assert shown["upstream"]["token"] == "********"
    assert [a["name"] for a in shown["accounts"]] == ["demo-media"]
    assert "release-test-token" not in checked.stdout + checked.stderr
    config.write_text("upstream: {token: x}\nlisten: nowhere\n", encoding="utf-8")
    bad = release.run("check-config", "--config", str(config))
    assert bad.returncode == 1
    assert bad.stderr.startswith("config error: listen: expected HOST:PORT")
