"""The simulator and ``cdnvideo-exporter run`` as real processes on free 127.0.0.1 ports."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.web.admin.demo_proc import free_port, stop, tool_env

TOKEN = "sim-token-for-lifecycle"


@dataclass
class Proc:
    proc: subprocess.Popen[str]
    log: Path

    def text(self) -> str:
        return self.log.read_text()

    def wait_for(self, needle: str, seconds: float = 20) -> str:
        deadline = time.monotonic() + seconds
        while needle not in (text := self.text()):
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{text}"
            assert time.monotonic() < deadline, f"no {needle!r} in:\n{text}"
            time.sleep(0.05)
        return text


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cdnvideo-exporter ARGS`` run to its end (check-config, or a run that stops at once)."""
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        env=tool_env(),
        cwd=cwd,
        timeout=60,
    )


@contextmanager
def started(args: list[str], workdir: Path, name: str) -> Iterator[Proc]:
    log = workdir / f"{name}.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=tool_env(),
            cwd=workdir,
            text=True,
        )
    try:
        yield Proc(proc, log)
    finally:
        stop(proc, signal.SIGTERM)


@contextmanager
def simulator(workdir: Path) -> Iterator[str]:
    """The simulator's base URL (accounts demo-media and demo-shop)."""
    port = free_port()
    args = ["simulate", "--listen", f"127.0.0.1:{port}", "--token", TOKEN]
    with started(args, workdir, "simulator") as sim:
        sim.wait_for("simulator listening")
        yield f"http://127.0.0.1:{port}"


def get(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(text: str, series: str) -> float | None:
    """The value of one series (name with its labels, as exposed) in an exposition."""
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return None


def wait_until(check: object, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)
