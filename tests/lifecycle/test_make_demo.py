"""`make demo` installs what running the exporter needs; the toolchain only for `make test`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from exporter.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _plan(target: str, venv: Path, *variables: str) -> list[str]:
    """The commands make would run for ``target`` with a fresh venv (make -n: nothing runs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}", *variables],
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
    assert installs == [  # the lock (versions and hashes), then the package alone
        f"{venv}/bin/pip install --quiet --require-hashes -r requirements.lock",
        f"{venv}/bin/pip install --quiet --no-deps -e .",
    ]
    assert demo[-1].rstrip() == f"{venv}/bin/cdnvideo-exporter demo"
    flags = "ARGS=--web.listen-address=127.0.0.1:9900 --simulator.listen-address=127.0.0.1:9901"
    moved = _plan("demo", venv, flags)
    assert moved[-1] == (
        f"{venv}/bin/cdnvideo-exporter demo "
        "--web.listen-address=127.0.0.1:9900 --simulator.listen-address=127.0.0.1:9901"
    )
    test = _plan("test", venv)
    assert f"{venv}/bin/pip install --quiet -e '.[dev]'" in test
    assert test.index(installs[0]) < test.index(f"{venv}/bin/pip install --quiet -e '.[dev]'")


def test_demo_help_names_both_addresses_with_their_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--web.listen-address HOST:PORT" in text
    assert "--simulator.listen-address HOST:PORT" in text
    assert "(default: 127.0.0.1:9877)" in text
    assert "(default: 127.0.0.1:0)" in text
