"""Every link the product shows resolves: the landing page's answer on the running app, the
package metadata's and the README's are files of this repository (or there are none)."""

from __future__ import annotations

import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

from exporter.config import parse_config
from exporter.support.clock import FakeClock
from tests.rig.daemon import running

ROOT = Path(__file__).resolve().parents[2]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [v for k, v in attrs if k in ("href", "src") and v]


async def test_every_landing_page_link_answers_on_the_app_itself() -> None:
    settings = parse_config(
        {
            "upstream": {"base_url": "http://127.0.0.1:9", "token": "t0ken"},
            "accounts": ["acme"],
            "admin": {"enabled": True, "write_token": "w" * 24},
        },
        env={},
    )
    async with running(settings, FakeClock(), telemetry_path="/probe") as daemon:
        client = daemon.client
        parser = _Links()
        page = await (await client.get("/")).text()
        parser.feed(page)
        assert parser.hrefs  # the page has links at all
        for href in parser.hrefs:
            if href.startswith("#"):  # within the page: the summary's links to the rows
                assert f'id="{href[1:]}"' in page, f"{href}: no such element"
                continue
            assert href.startswith("/"), f"{href}: points outside the exporter"
            reply = await client.get(href)
            assert reply.status in (200, 503), f"{href}: {reply.status}"  # readyz: not ready
    assert "/probe" in parser.hrefs  # the metrics link follows --web.telemetry-path
    assert "#account-0" in parser.hrefs


def test_package_metadata_links_point_into_this_repository() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for name, url in project.get("urls", {}).items():
        assert not re.match(r"[a-z]+://", url), f"[project.urls] {name}: {url} is not ours"
        assert (ROOT / url).is_file(), f"[project.urls] {name}: no file {url}"


def test_readme_links_to_files_that_exist() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == []
