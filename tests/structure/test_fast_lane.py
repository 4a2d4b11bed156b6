"""`make test-fast` collects the in-process tests and leaves out real tools, child daemons and
the slow ones; `make test` collects everything."""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FULL_SUITE, in_full_suite_only

# One worker runs them all, so each collection (``_collected``) is made once.
pytestmark = pytest.mark.xdist_group("fast_lane")

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT_DIRS = (
    "tests/system/",
    "tests/release/",
    "tests/deploy/",
    "tests/lifecycle/",
    "tests/reliability/",
)
SLOW = "tests/traffic/test_limits.py::test_a_budget_of_3_a_minute_with_the_default_sche"


def _make_variable(name: str) -> list[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.search(rf"^{name} :?= (.*)$", text, re.M)
    assert found, f"{name} is not set in the Makefile"
    return shlex.split(found.group(1))


@functools.cache
def _collected(*args: str) -> list[str]:
    """The test ids pytest collects with ``args`` (each collection once a process: two tests
    here read the fast lane's)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,  # a safety net: collecting everything on a loaded machine takes minutes
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_fast_lane_leaves_out_real_tools_daemons_and_slow_tests() -> None:
    fast = _collected(*_make_variable("FAST_ARGS"))
    assert len(fast) > 1000
    assert [t for t in fast if t.startswith(LEFT_OUT_DIRS)] == []
    assert [t for t in fast if "promtool" in t or "_browser.py" in t] == []
    assert [t for t in fast if t.startswith(SLOW)] == []
    for kept in (
        "tests/golden/test_golden.py",
        "tests/config/",
        "tests/restream/",
        "tests/runtime/",
    ):
        assert any(t.startswith(kept) for t in fast), kept


def test_make_test_keeps_the_whole_suite() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    # Two runs side by side whose markers complement each other: together the whole suite.
    assert "$(BIN)/python -m pytest -q -ra -m realtime -p no:cacheprovider $(PYTEST_ARGS)" in recipe
    rest = '$(BIN)/python -m pytest -q -ra -m "not realtime" -n $(TEST_WORKERS) --dist loadgroup'
    assert rest in recipe.replace("\\\n\t  ", "")
    assert "FAST_ARGS" not in recipe


def test_the_fast_lane_runs_a_handful_of_simulation_seeds() -> None:
    """`make test-fast` runs one fast simulation seed, not the CI batch, the pinned scenarios
    or the replay tests (`make test` runs those: the marker is not `slow`)."""
    fast = _collected(*_make_variable("FAST_ARGS"))
    sim = [t for t in fast if t.startswith("tests/simulation/")]
    assert 1 <= len([t for t in sim if "test_fast_seed" in t]) <= 2
    assert [t for t in sim if "test_seed_holds_the_invariant" in t or "test_pinned" in t] == []
    assert [t for t in sim if "test_same_seed_same_run_byte_for_byte" in t] == []
    everything = _collected("tests/simulation")
    assert any("test_seed_holds_the_invariant" in t for t in everything)
    assert any("test_pinned" in t for t in everything)
    assert any("test_same_seed_same_run_byte_for_byte" in t for t in everything)


def test_the_fast_lane_runs_on_every_core_and_what_it_moves_exists() -> None:
    """`make test-fast` runs its tests in parallel (pytest-xdist); each test ``FULL_SUITE``
    moves to `make test` is collected there (a renamed one is not lost) and left out of the
    fast lane's marker selection."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest-fast: ", 1)[1].split("\n\n", 1)[0]
    assert "-n $(FAST_WORKERS)" in recipe
    files = sorted({name.split("::")[0] for name in FULL_SUITE})
    moved = [t for t in _collected(*files) if in_full_suite_only(t)]
    assert [n for n in FULL_SUITE if not any(t == n or t.startswith(f"{n}[") for t in moved)] == []
    assert [t for t in _collected(*files, "-m", "not slow") if t in moved] == []
