"""One version: ``--version``, ``cdnvideo_exporter_build_info``, the landing page, the
package metadata and the newest CHANGELOG entry all say ``exporter.__version__``."""

from __future__ import annotations

import platform
import re
import tomllib
from pathlib import Path

import pytest

from exporter import __version__
from exporter.cli import main
from exporter.config import parse_config
from exporter.support.buildinfo import build_info as read_build_info
from exporter.support.clock import FakeClock
from tests.rig.daemon import running

REPO = Path(__file__).resolve().parents[2]


async def test_build_info_landing_page_and_version_flag_agree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    build = read_build_info()
    assert printed == (
        f"cdnvideo-exporter, version {__version__} (branch: {build.branch}, "
        f"revision: {build.revision})\n  python version: {platform.python_version()}\n"
    )
    shown = printed.split()[2]  # "cdnvideo-exporter," "version" "0.1.0" ...

    settings = parse_config(
        {"upstream": {"base_url": "http://127.0.0.1:9", "token": "t"}, "accounts": ["a"]},
        env={},
    )
    async with running(settings, FakeClock()) as daemon:
        client = daemon.client
        metrics = await (await client.get("/metrics")).text()
        landing = await (await client.get("/")).text()
    build_info = re.findall(
        r'^cdnvideo_exporter_build_info\{.*version="([^"]+)"\} 1', metrics, re.M
    )
    page = re.findall(r'<p class="meta">version ([^ <]+) ', landing)
    assert {shown, *build_info, *page} == {__version__}
    assert len(build_info) == len(page) == 1


def test_the_changelog_and_the_package_metadata_name_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    # "Unreleased" (Keep a Changelog) collects changes since; the newest release is the version
    released = [v for v in re.findall(r"^## \[([^\]]+)\]", changelog, re.M) if v != "Unreleased"]
    assert released, "CHANGELOG.md has no released version"
    assert released[0] == __version__
    assert f"\n[{__version__}]: " in changelog  # the entry's link
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]  # read from exporter.__version__, nowhere else
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "exporter.__version__"}
