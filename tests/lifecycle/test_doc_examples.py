"""Every shell example in README.md and docs/ runs as written, or says why it cannot here.

The line before each ```sh block is a marker:

- ``<!-- example: demo -->``: run by this test against ``cdnvideo-exporter demo`` (a real
  process on free ports) as written: the blocks of one file run in order in one ``bash -euo
  pipefail`` after the ``export`` lines the demo's banner printed (``EXPORTER``, ``S`` for the
  simulator, the admin tokens in ``CDNVIDEO_ADMIN_READ_TOKEN``/``_WRITE_TOKEN``; the docs
  define every other variable they use), with ``curl`` failing on an HTTP error
  (``--fail-with-body``), so an answer of 4xx or 5xx fails the example;
- ``<!-- example: deployment -->``: needs the real platform or a deployment (docker, kubectl,
  a daemon started with your config, its pid);
- ``<!-- example: tooling -->``: the project's own tooling (make, pytest, bench, promtool), which
  CI runs itself;
- ``<!-- example: slow -->``: waits for something that takes minutes even in the demo (a
  talking-head video being made); the demo blocks around it run.

A block without a marker fails the first test, so a new example is classified when written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.admin.demo_proc import Demo, running_demo, tool_env

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
KINDS = ("demo", "deployment", "tooling", "slow")
_BLOCK = re.compile(r"^(?P<marker>[^\n]*)\n```(?:sh|bash|shell)\n(?P<code>.*?)^```", re.M | re.S)
_MARKER = re.compile(r"<!-- example: (\w+) -->")
PRELUDE = 'curl() { command curl --fail-with-body "$@"; }\n'


def blocks(path: Path) -> list[tuple[int, str | None, str]]:
    """(line, marker kind or None, code) of each shell block of ``path``."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in _BLOCK.finditer(text):
        kind = _MARKER.fullmatch(m.group("marker").strip())
        line = text.count("\n", 0, m.start("code"))
        found.append((line, kind.group(1) if kind else None, m.group("code")))
    return found


def test_every_shell_example_is_marked() -> None:
    unmarked = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in DOCS
        for line, kind, _ in blocks(path)
        if kind not in KINDS
    ]
    assert unmarked == [], f"shell examples without <!-- example: {'|'.join(KINDS)} -->"
    demo = [p for p in DOCS if any(kind == "demo" for _, kind, _ in blocks(p))]
    assert len(demo) >= 3  # README.md, docs/admin-api.md, docs/simulator.md at least


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    if shutil.which("curl") is None or shutil.which("jq") is None:
        pytest.skip("curl and jq run the examples")
    with running_demo(tmp_path_factory.mktemp("demo")) as running:
        yield running


@pytest.mark.parametrize(
    "path",
    [p for p in DOCS if any(kind == "demo" for _, kind, _ in blocks(p))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_demo_examples_run_as_written(path: Path, demo: Demo, tmp_path: Path) -> None:
    assert len(demo.exports) == 4, demo.exports  # EXPORTER, S and the two admin tokens
    script = PRELUDE + "\n".join(
        [
            *demo.exports,
            *(
                f"echo '--- {path.name}:{line}'\n{code}"
                for line, kind, code in blocks(path)
                if kind == "demo"
            ),
        ]
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        env=tool_env(),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
