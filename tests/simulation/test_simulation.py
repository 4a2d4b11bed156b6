"""The simulation in CI: a batch of seeds must hold the invariant, and a seed replays exactly.

``CI_SEEDS`` seeds of ``CI_MINUTES`` simulated minutes each (docs/dev/testing.md gives the
figure: a full day per seed does not fit CI's minutes). ``make sim`` runs thousands of full
days. The batch is marked ``simulation_batch`` (left out of ``make test-fast``; ``make test``
and CI run it); ``FAST_SEEDS`` run in both.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.simulation.harness import run_scenario, run_seed
from tests.simulation.invariant import KINDS
from tests.simulation.scenario import draw

CI_MINUTES = 150
CI_SEEDS = range(1000, 1032)
FAST_MINUTES = 90
FAST_SEEDS = (2000, 2001, 2002)
# Seeds of the CI range that find an open failure (issue 35), each a strict expected failure.
KNOWN: dict[int, str] = {
    1005: "open: miscounted by 12-13 requests an account after a restart that shortens the "
    "schedule (5, 15, 60) -> 5 with late data of 600 s under the platform's limit",
    1016: "open: acc1 edge requests 87,141 below the reads made (late 1800 s, revisit 5, "
    "outages, acc2 unlisted and a restart)",
    1021: "open: acc1 edge requests 23,830 below the reads made (late 900 s, revisit 5, "
    "discovery missing acc2 for 15 minutes); also without resource-churn",
    1026: "open: acc1 edge requests 410 below the reads made after a killed restart that "
    "shortens (5, 60) to 5, late 600 s; also without resource-churn",
    1031: "open: acc1 edge requests 2,044 below the reads made (late 900 s, revisit 10, host "
    "clock 300 s ahead for 10 min; also without resource-churn)",
}


def _check(seed: int, minutes: int) -> None:
    timed = asyncio.run(run_seed(seed, minutes))
    out = timed.outcome
    assert out.violations == [], (
        out.line() + f"\nreplay: python -m tests.simulation --seed {seed} --minutes {minutes}"
        " --verbose"
    )


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_fast_seed_holds_the_invariant(seed: int) -> None:
    _check(seed, FAST_MINUTES)


def _batch() -> list[object]:
    """The CI seeds; those that find an open failure of issue 35 are strict expected failures
    (its fix turns them into a red XPASS: then drop them from ``KNOWN``)."""
    return [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=KNOWN[s])) if s in KNOWN else s
        for s in CI_SEEDS
    ]


@pytest.mark.simulation_batch
@pytest.mark.parametrize("seed", _batch())
def test_seed_holds_the_invariant(seed: int) -> None:
    _check(seed, CI_MINUTES)


@pytest.mark.parametrize("seed", [1003, 1007])  # 1007: resources added, renamed, deleted
def test_same_seed_same_run_byte_for_byte(seed: int) -> None:
    """Two runs of one seed: the same requests at the same instants, the same scrapes."""
    scenario = draw(seed, 120)
    first = asyncio.run(run_scenario(scenario))
    second = asyncio.run(run_scenario(scenario))
    assert first.requests > 100
    assert first.digest == second.digest
    assert first.violations == second.violations


def test_another_seed_is_another_run() -> None:
    """The digest covers the run: a different seed gives a different one."""
    a = asyncio.run(run_scenario(draw(1003, 60)))
    b = asyncio.run(run_scenario(draw(1004, 60)))
    assert a.digest != b.digest


def test_every_kind_is_documented() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "dev" / "testing.md").read_text()
    assert [k for k in KINDS if f"`{k}`" not in text] == []
