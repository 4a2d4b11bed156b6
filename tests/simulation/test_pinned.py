"""The six failures of issue 35, each a small pinned scenario through the simulation harness.

Each test asserts that the run shows none of the violation kinds its failure causes; it is
``xfail(strict=True)`` while the failure exists, so main stays green, and turns into a red
XPASS once the fix lands: then the mark is removed and the scenario guards the fix. A test
that fails for another reason than the one it names would hide a regression, so each also
checks that its run did what the scenario means (requests were sent, reads were answered).
``python -m tests.simulation.test_pinned NAME`` prints one scenario's run.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace

import pytest

from tests.simulation.harness import Outcome, run_scenario
from tests.simulation.scenario import Daemon, Event, Scenario

pytestmark = pytest.mark.simulation_batch  # in make test and CI, not in make test-fast


def scenario(seed: int, minutes: int, events: tuple[Event, ...] = (), **kw: object) -> Scenario:
    base = Scenario(
        seed=seed,
        minutes=minutes,
        accounts=("acc1",),
        resources=3,
        late_seconds=300.0,
        late_half_seconds=0.0,
        quirks=(),
        platform_limit=0,
        delay_seconds=120,
        catch_up_minutes=60,
        discovery=False,
        daemon=Daemon(),
        events=events,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def ev(minute: int, kind: str, **args: object) -> Event:
    return Event(minute * 60, kind, tuple(args.items()))


PINNED: dict[str, tuple[Scenario, frozenset[str]]] = {
    # 1. One-minute replies and a budget: settle runs re-read in pieces, pieces thrown away.
    "budget_one_minute": (
        scenario(
            35_001,
            180,
            quirks=("one-minute-window",),
            daemon=Daemon(revisit=5, budget=3),
        ),
        frozenset({"miscounted", "silent minutes", "not final", "silent stall"}),
    ),
    # 2. A settle schedule shortened across a restart drops the runs still owed.
    "schedule_changed_across_restart": (
        scenario(
            35_002,
            240,
            (ev(70, "restart", mode="clean", down=0, revisit=(5, 60)),),
            late_seconds=1800.0,
            daemon=Daemon(revisit=(5, 15, 60)),
        ),
        frozenset({"not final", "settle read missing"}),
    ),
    # 3. An account missing from the first discovery reply after a restart is released.
    "missing_at_start_released": (
        scenario(
            35_003,
            150,
            (
                ev(40, "restart", mode="clean", down=1),
                ev(40, "unlist", account="acc2"),
                ev(55, "relist", account="acc2"),
            ),
            accounts=("acc1", "acc2"),
            discovery=True,
        ),
        frozenset({"silent minutes"}),
    ),
    # 4. A family shown for the first time by a reload jumps by its whole history.
    "family_included_by_reload": (
        scenario(
            35_004,
            120,
            (
                ev(0, "exclude", family="account_requests"),
                ev(60, "exclude", family=""),
            ),
        ),
        frozenset({"series jump", "series born nonzero"}),
    ),
    # 5. The host's clock stepped 600 s forward for 30 minutes.
    "host_clock_step": (
        scenario(
            35_005,
            150,
            (ev(40, "clock", offset=600), ev(70, "clock", offset=0)),
        ),
        frozenset({"read before close", "miscounted", "silent minutes"}),
    ),
    # 6. Settle reads drift later than the schedule when runs merge.
    "settle_reads_drift": (
        scenario(35_006, 120, late_seconds=180.0, daemon=Daemon(revisit=(1, 4))),
        frozenset({"late settle read", "settle read missing"}),
    ),
}


def run(name: str) -> Outcome:
    return asyncio.run(run_scenario(PINNED[name][0]))


def _holds(name: str) -> None:
    out = run(name)
    kinds = PINNED[name][1]
    assert out.requests > 50, "the scenario ran: requests were sent"
    found = [v for v in out.violations if v.kind in kinds]
    assert found == [], out.line()


# Pinned failures still open (strict xfail until their fix lands; then the entry goes).
REASONS: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=REASONS[n]))
        if n in REASONS
        else n
        for n in PINNED
    ],
)
def test_issue_35_failure_is_gone(name: str) -> None:
    """The pinned scenario shows none of the violation kinds its failure causes."""
    _holds(name)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(PINNED):
        s = PINNED[name][0]
        print("\n".join(s.describe()))
        out = run(name)
        print(out.line())
        for v in out.violations[:12]:
            print(f"  {v.kind}: {v.detail}")
        print(f"  {out.requests} requests")
