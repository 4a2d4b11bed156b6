"""`make demo` installs what running the exporter needs; the toolchain only for `make test`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _plan(target: str, venv: Path) -> list[str]:
    """The commands make would run for ``target`` with a fresh venv (make -n: nothing runs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_demo_installs_the_runtime_only_and_test_adds_the_toolchain(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    demo = _plan("demo", venv)
    installs = [line for line in demo if "pip install" in line and "--upgrade pip" not in line]
    assert installs == [f"{venv}/bin/pip install --quiet -e ."]
    assert demo[-1] == f"{venv}/bin/cdnvideo-exporter demo"
    test = _plan("test", venv)
    assert f"{venv}/bin/pip install --quiet -e '.[dev]'" in test
    assert test.index(installs[0]) < test.index(f"{venv}/bin/pip install --quiet -e '.[dev]'")
