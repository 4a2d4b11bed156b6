"""/metrics carries prometheus-client's process and platform collectors and the build stamp."""

from __future__ import annotations

import json
import platform
import re
import subprocess
from pathlib import Path

from exporter.config import parse_config
from exporter.support.buildinfo import build_info
from exporter.support.clock import FakeClock
from tests.rig.daemon import running

CONFIG = {"upstream": {"base_url": "http://127.0.0.1:9", "token": "t0ken"}, "accounts": ["a"]}


async def test_metrics_has_process_and_python_info_and_full_build_info() -> None:
    async with running(parse_config(CONFIG, env={}), FakeClock()) as daemon:
        client = daemon.client
        text = await (await client.get("/metrics")).text()
    cpu = re.search(r"^process_cpu_seconds_total ([0-9.e+]+)$", text, re.M)
    rss = re.search(r"^process_resident_memory_bytes ([0-9.e+]+)$", text, re.M)
    assert cpu is not None
    assert rss is not None
    assert float(rss.group(1)) > 1_000_000  # this process, a real figure
    assert "# TYPE process_start_time_seconds gauge" in text
    version = platform.python_version()
    assert f'python_info{{implementation="{platform.python_implementation()}"' in text
    assert f'version="{version}"}} 1.0' in text
    build = build_info()  # an editable install has no stamp: a checkout's git tells
    assert (
        f'cdnvideo_exporter_build_info{{branch="{build.branch}",'
        f'pythonversion="{version}",revision="{build.revision}",version="0.1.0"}} 1.0'
    ) in text


def test_a_stamped_build_reports_its_revision_and_branch(tmp_path: Path) -> None:
    stamp = tmp_path / "_build.json"
    stamp.write_text(json.dumps({"revision": "0a1b2c3d", "branch": "main"}))
    info = build_info(stamp)
    assert (info.revision, info.branch) == ("0a1b2c3d", "main")
    stamp.write_text("[not an object]")
    no_checkout = build_info(stamp, checkout=tmp_path)
    assert (no_checkout.revision, no_checkout.branch) == ("unknown", "unknown")


def test_a_git_checkout_without_a_stamp_reports_its_revision_and_branch(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    (tmp_path / "pyproject.toml").write_text("[project]\n")
    git("init", "-q", "-b", "release-1")
    git("add", "pyproject.toml")
    git("commit", "-q", "-m", "one")
    info = build_info(tmp_path / "no-stamp.json", checkout=tmp_path)
    assert (info.revision, info.branch) == (git("rev-parse", "HEAD"), "release-1")
    assert len(info.revision) == 40
