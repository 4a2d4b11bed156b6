"""``cdnvideo-exporter demo`` as a real process on free 127.0.0.1 ports, for contract tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Demo:
    """The running demo: the exporter's base URL and the admin tokens it printed, and its
    ``export NAME=value`` lines as they were printed."""

    base_url: str
    read_token: str
    write_token: str
    simulator_url: str = ""
    exports: tuple[str, ...] = ()

    @property
    def openapi_url(self) -> str:
        return f"{self.base_url}/api/v1/openapi.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tool_env() -> dict[str, str]:
    """The environment of a child process: this venv's tools first, the repo importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDNVIDEO_")}
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@contextmanager
def running_demo(workdir: Path) -> Iterator[Demo]:
    """Start the demo (simulator and exporter on free ports); stop it on exit."""
    out = workdir / "demo.out"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "exporter",
                "demo",
                "--web.listen-address",
                f"127.0.0.1:{free_port()}",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=tool_env(),
            cwd=workdir,
        )
    try:
        deadline = time.monotonic() + 30
        text = ""
        while "Press Ctrl-C" not in text:
            assert proc.poll() is None, f"demo exited early:\n{out.read_text()}"
            assert time.monotonic() < deadline, f"demo did not start:\n{text}"
            time.sleep(0.1)
            text = out.read_text()
        spec = re.search(r"admin API spec\s+(\S+)/api/v1/openapi\.json", text)
        tokens = re.search(r"admin tokens\s+read (\S+)\s+write (\S+)", text)
        simulator = re.search(r"simulator\s+(http://\S+?)/?\s", text)
        assert spec, text
        assert tokens, text
        assert simulator, text
        exports = tuple(re.findall(r"^export [A-Z_]+=\S+$", text, re.M))
        yield Demo(spec.group(1), tokens.group(1), tokens.group(2), simulator.group(1), exports)
    finally:
        stop(proc, signal.SIGINT)


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str], sig: signal.Signals) -> None:
    """Ask a child to stop with ``sig``; kill it if it has not exited 10 s later."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
