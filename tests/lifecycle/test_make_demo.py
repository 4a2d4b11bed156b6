"""`make demo` installs what running the exporter needs; the toolchain only for `make test`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.cli import main
from tests.web.admin.demo_proc import running_demo, tool_env

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


def _demo_on(*flags: str) -> subprocess.CompletedProcess[str]:
    """``cdnvideo-exporter demo`` with ``flags`` as a process (a hang fails after 60 s)."""
    return subprocess.run(
        [sys.executable, "-m", "exporter", "demo", *flags],
        capture_output=True,
        text=True,
        env=tool_env(),
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("flag", ["--web.listen-address", "--simulator.listen-address"])
def test_a_taken_port_stops_the_demo_before_it_starts_anything_naming_the_flag(flag: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        other = "--simulator.listen-address" if flag == "--web.listen-address" else ""
        done = _demo_on(f"{flag}={address}", *([f"{other}=127.0.0.1:0"] if other else []))
    assert done.returncode == 1
    assert done.stdout == ""  # no banner, no start-up line: nothing was started
    assert done.stderr.splitlines() == [
        f"error: {flag} {address}: Address already in use; pass a free address, e.g. "
        f"make demo ARGS={flag}=127.0.0.1:9900 (cdnvideo-exporter demo {flag}=...)"
    ]


def test_the_banner_prints_export_lines_a_shell_takes_as_they_are(tmp_path: Path) -> None:
    with running_demo(tmp_path) as demo:
        names = [line.split("=", 1)[0] for line in demo.exports]
        script = "\n".join(demo.exports) + (
            '\ncurl -sf -o /dev/null -w "%{http_code}" '
            '-H "Authorization: Bearer $CDNVIDEO_ADMIN_READ_TOKEN" '
            '"$EXPORTER/api/v1/restream/demo-media/status"'
            '\necho " $CDNVIDEO_ADMIN_WRITE_TOKEN"'
            '\ncurl -sf "$S/_sim/" | jq -r ".accounts | length"'
        )
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            capture_output=True,
            text=True,
            env=tool_env(),
            timeout=60,
            check=False,
        )
    assert names == [
        "export EXPORTER",
        "export S",
        "export CDNVIDEO_ADMIN_READ_TOKEN",
        "export CDNVIDEO_ADMIN_WRITE_TOKEN",
    ]
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["200", demo.write_token, "2"]
