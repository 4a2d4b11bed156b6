"""The simulation in CI: a batch of seeds must hold the invariant, and a seed replays exactly.

``CI_SEEDS`` seeds of ``CI_MINUTES`` simulated minutes each, 7 simulated days, run over the
machine's cores at once (docs/dev/testing.md gives the figures). ``make sim`` runs a thousand
full days. The batch is marked ``simulation_batch`` (left out of ``make test-fast``; ``make
test`` and CI run it); ``FAST_SEEDS`` run in both.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from tests.simulation.harness import Outcome, run_scenario, run_seed, run_seeds
from tests.simulation.invariant import KINDS
from tests.simulation.scenario import Daemon, Event, Scenario, draw

CI_MINUTES = 360
CI_SEEDS = range(1000, 1028)  # 28 seeds of 6 h: 7 simulated days (CI's 20 minutes)
FAST_MINUTES = 90
FAST_SEEDS = (2000, 2001, 2002)
# Seeds of the CI range and of FAST_SEEDS that find an open failure, each a strict expected
# failure.
KNOWN: dict[int, str] = {}

# Seeds outside the CI range that found a mistake (of the exporter or of the checker's model
# of counting, issue 35), with the simulated minutes they run: each failed before the fix
# named, and holds the invariant since. Each replays the day that found it: drawn before a
# second replica was (``Scenario.pair``), so without one (the CI batch and the pair's own
# tests run two replicas).
FOUND_MINUTES = 120
FOUND: dict[int, tuple[int, str]] = {
    4012: (120, "pieces of a settle read the end of the day left unapplied"),
    4074: (120, "a first read set aside on a doubted clock at the end of the day"),
    4129: (120, "a read between a reload that takes a family in and the scrape that sees it at 0"),
    4068: (120, "a resource series a reload takes back after a restart saved it as not exported"),
    4035: (120, "a minute whose per-resource half failed, then missed beyond catch-up"),
    4107: (120, "a resource series new while saves failed: what it counted then was dropped"),
    5352: (60, "a settle read set aside on a doubted clock (a bogus Date) as the day ends"),
    4065: (120, "the late data a settle read after a start adds to a series shown again at 0"),
    4070: (120, "a per-code series first counted at 0, then counted while counters were held"),
    5872: (60, "a resource renamed at the end, or out of the filter, held to its reads (checker)"),
    5669: (60, "a settle read set aside on a doubted clock held back the runs due behind it"),
    5030: (60, "a read on a doubted clock taken as counted (its reply's Date an hour off)"),
    5042: (60, "owed misreported: settle reads of a fetch whose Date was off taken as ages read"),
    4135: (120, "owed misreported: one overdue read after a kill taken for every age left"),
    4136: (120, "owed misreported: a day ending while the daemon is down, held to the end"),
    3008: (120, "read before close: restarted with the host clock 90 min fast, past catch-up"),
    3046: (120, "silent minutes: a state file corrupt after an outage held its cursor back"),
    3021: (120, "silent minutes: an account back after its ledger was dropped (checker)"),
    3024: (120, "not final: a run under a lengthened schedule held to the old one (checker)"),
    3047: (120, "miscounted: a series new after a restart held to a read it forgot (checker)"),
    1023: (360, "series jump: a bytes series 1 byte above the exact sum of its rates (checker)"),
    3029: (120, "late settle read: a window one minute longer than its tolerance (checker)"),
    1029: (360, "not final: a state file lost after the schedule shortened named too few"),
    1042: (360, "series vanished: a resource out of the top N longer than retention (checker)"),
    1043: (270, "resources off: a series gone by retention took its count with it (checker)"),
    1036: (360, "lateness off: a first read whose other half was answered later (checker)"),
    1038: (140, "remote write missing: a half answered alone taken as a first read (checker)"),
    3012: (120, "lateness off: a first read at the end not shown yet, owed named (checker)"),
    1034: (360, "settle read missing: still owed behind a named backlog at the end (checker)"),
}
# Seeds of FOUND that find an open failure of the exporter (strict expected failures).
FOUND_OPEN: dict[int, str] = {}


def _check(seed: int, minutes: int, out: Outcome | None = None) -> None:
    if out is None:
        out = asyncio.run(run_seed(seed, minutes)).outcome
    assert out.violations == [], (
        out.line() + f"\nreplay: python -m tests.simulation --seed {seed} --minutes {minutes}"
        " --verbose"
    )


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=KNOWN[s])) if s in KNOWN else s
        for s in FAST_SEEDS
    ],
)
def test_fast_seed_holds_the_invariant(seed: int) -> None:
    _check(seed, FAST_MINUTES)


def _batch() -> list[object]:
    """The CI seeds; those that find an open failure of issue 35 are strict expected failures
    (its fix turns them into a red XPASS: then drop them from ``KNOWN``)."""
    return [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=KNOWN[s])) if s in KNOWN else s
        for s in CI_SEEDS
    ]


# The batch's outcomes by seed, once per process: a worker of pytest-xdist may tear a module's
# fixture down between two of its tests (when the next test it is sent is another module's)
# and set it up again; the batch is not run twice for that.
_BATCH: dict[tuple[int, ...], dict[int, Outcome]] = {}


def _run_batch(seeds: tuple[int, ...]) -> dict[int, Outcome]:
    jobs = min(len(seeds), os.cpu_count() or 1)
    outcomes = (t.outcome for t in run_seeds(seeds, CI_MINUTES, jobs))
    return dict(zip(seeds, outcomes, strict=True))


def _shared(seeds: tuple[int, ...], directory: Path) -> dict[int, Outcome]:
    """The batch's outcomes, computed by the first worker of the session to ask and read from
    its file by the others (each waits on the lock meanwhile: the batch has the cores). The
    ``xdist_group`` mark is not enough: pytest-xdist's ``loadgroup`` was seen to send two of
    the batch's tests to another worker, which ran the whole batch again."""
    path = directory / f"simulation-batch-{'-'.join(map(str, seeds))}-{CI_MINUTES}.pickle"
    with open(directory / "simulation-batch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            outcomes: dict[int, Outcome] = pickle.loads(path.read_bytes())
            return outcomes
        outcomes = _run_batch(seeds)
        path.write_bytes(pickle.dumps(outcomes))
        return outcomes


@pytest.fixture(scope="module")
def batch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[int, Outcome]:
    """The outcomes of the CI seeds this session runs, computed at once over the machine's
    cores (``run_seeds``, as ``make sim`` runs them), once a session: each seed's test reads
    its own."""
    name = test_seed_holds_the_invariant.__name__
    seeds = tuple(
        item.callspec.params["seed"]
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == name
    )
    if seeds not in _BATCH:
        if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' base shares this parent
            _BATCH[seeds] = _shared(seeds, tmp_path_factory.getbasetemp().parent)
        else:
            _BATCH[seeds] = _run_batch(seeds)
    return _BATCH[seeds]


@pytest.mark.simulation_batch
@pytest.mark.xdist_group("simulation_batch")  # one worker computes the batch (``batch``)
@pytest.mark.parametrize("seed", _batch())
def test_seed_holds_the_invariant(seed: int, batch: dict[int, Outcome]) -> None:
    _check(seed, CI_MINUTES, batch[seed])


@pytest.mark.simulation_batch
@pytest.mark.parametrize(
    ("seed", "minutes"),
    [
        pytest.param(s, FOUND[s][0], marks=pytest.mark.xfail(strict=True, reason=FOUND_OPEN[s]))
        if s in FOUND_OPEN
        else (s, FOUND[s][0])
        for s in sorted(FOUND)
    ],
)
def test_found_seed_holds_the_invariant(seed: int, minutes: int) -> None:
    _check(seed, minutes, asyncio.run(run_scenario(replace(draw(seed, minutes), pair=False))))


@pytest.mark.parametrize("seed", [1003, 1007])  # 1007: resources added, renamed, deleted
def test_same_seed_same_run_byte_for_byte(seed: int) -> None:
    """Two runs of one seed: the same requests at the same instants, the same scrapes."""
    scenario = draw(seed, 120)
    first = asyncio.run(run_scenario(scenario))
    second = asyncio.run(run_scenario(scenario))
    assert first.requests > 100
    assert first.digest == second.digest
    assert first.violations == second.violations


def test_a_day_with_audits_replays_byte_for_byte() -> None:
    """Seed 1038 over 3 hours: the standing audit samples windows from the second hour on,
    and its reads spend the platform's rate limit; its draw follows the seed. A second
    replica of the shard runs beside the daemon that day: its jitter follows the seed too."""
    scenario = draw(1038, 180)
    first = asyncio.run(run_scenario(scenario))
    second = asyncio.run(run_scenario(scenario))
    assert first.digest == second.digest


def test_another_seed_is_another_run() -> None:
    """The digest covers the run: a different seed gives a different one."""
    a = asyncio.run(run_scenario(draw(1003, 60)))
    b = asyncio.run(run_scenario(draw(1004, 60)))
    assert a.digest != b.digest


def test_every_kind_is_documented() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "dev" / "testing.md").read_text()
    assert [k for k in KINDS if f"`{k}`" not in text] == []


def test_an_audit_read_is_not_a_read_that_counts() -> None:
    """The standing audit re-reads settled windows and compares; the invariant holds the
    counters to the traffic reads only (seed 1005 found the checker counting the audit's)."""
    from tests.simulation.invariant import _answered
    from tests.simulation.transport import Read

    counted = Read(at=600.0, account="a", start=0, end=120, resources=False, status=200,
                   answered=True)  # fmt: skip
    audit = Read(at=7200.0, account="a", start=60, end=180, resources=False, status=200,
                 answered=True, audit=True)  # fmt: skip
    assert dict(_answered([counted, audit])) == {
        ("a", False, 0): [600.0],
        ("a", False, 60): [600.0],
    }


def test_a_minute_with_one_half_answered_was_not_read() -> None:
    """A first read takes both halves or neither: a minute whose per-resource half failed and
    that fell out of catch-up before it was read again (seed 4035) was never counted."""
    from tests.simulation.invariant import _first_read

    reads = {("a", False, 0): [300.0], ("a", True, 0): [300.0], ("a", False, 60): [360.0]}
    assert _first_read(reads) == {("a", False, 0): [300.0], ("a", True, 0): [300.0]}


def _pair(minutes: int) -> Scenario:
    """Two replicas of one shard under the platform's limit of 8 requests a minute, each
    needing about 4.4 a minute for [1, 4] (more while catching an outage up): the limit
    refuses some of each replica's reads."""
    return replace(
        draw(1019, minutes),
        accounts=("acc1",),
        quirks=(),
        platform_limit=8,
        daemon=Daemon(revisit=(1, 4)),
        events=(Event(30 * 60, "outage", (("kind", "503"), ("minutes", 10))),),
        remote_write=True,
        pair=True,
    )


def test_two_replicas_of_a_shard_each_count_every_minute_once() -> None:
    """The second replica polls the same platform (its own state file, its own scrapes), under
    the one rate limit; each replica's counters hold the invariant on their own."""
    out = asyncio.run(run_scenario(_pair(60)))
    assert out.violations == []
    assert out.requests > 200
    assert out.twin_requests > 200
    assert out.refused > 0  # the two together met the platform's limit


def test_the_second_replica_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second replica whose checker takes the platform's figures to rise for an hour (they
    rise for 5 minutes) is found wrong, and its findings say which replica."""
    twin = Scenario.twin
    monkeypatch.setattr(Scenario, "twin", lambda s: replace(twin(s), late_seconds=3600.0))
    out = asyncio.run(run_scenario(replace(_pair(60), remote_write=False)))
    assert out.violations
    assert all(v.detail.startswith("second replica: ") for v in out.violations)
