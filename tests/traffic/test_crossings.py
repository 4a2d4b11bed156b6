"""The crossings of one traffic poll between the event loop and the refresh worker, counted
and held to what docs/dev/architecture.md states (*The traffic area*): a plain poll (first
reads, no settle read due) crosses at most three times; a settle read adds two."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.support import offloop
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller, exposure
from tests.rig.source import FakeSource, MakePoller

ACC = "acme"


class Crossings:
    """Every step submitted to the refresh worker, by the function it runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps: list[str] = []
        submit = offloop.WORKER.submit

        def counted(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            step = args[0] if getattr(fn, "__name__", "") == "run" and args else fn
            self.steps.append(getattr(step, "__qualname__", repr(step)))
            return submit(fn, *args, **kwargs)

        monkeypatch.setattr(offloop.WORKER, "submit", counted)

    async def of(self, poller: TrafficPoller) -> list[str]:
        """The steps one poll of ``ACC`` submitted."""
        self.steps.clear()
        await poller.poll(ACC)
        return list(self.steps)


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> Crossings:
    return Crossings(monkeypatch)


async def test_a_plain_poll_crosses_to_the_worker_three_times(
    make_poller: MakePoller, clock: FakeClock, crossings: Crossings, tmp_path: Path
) -> None:
    p = make_poller(revisit_minutes=5, state_file=str(tmp_path / "traffic.json"))
    await p.poll(ACC)
    clock.advance(60)  # one more minute ready; the runs read are not due yet
    assert p.accounts.ledger(ACC).pending
    steps = await crossings.of(p)
    assert steps == ["Reader.first", "Publisher._build_step", "Publisher._save_step"]


async def test_a_poll_with_a_settle_read_crosses_twice_more(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    crossings: Crossings,
    tmp_path: Path,
) -> None:
    p = make_poller(revisit_minutes=5, state_file=str(tmp_path / "traffic.json"))
    await p.poll(ACC)
    clock.advance(5 * 60)  # the first run's settle read is due
    steps = await crossings.of(p)
    assert steps.count("Reader.first") >= 1
    assert steps.count("due") == 1  # asked once the run is due, on the worker
    assert steps.count("Reader.settle") == 1
    assert steps[-2:] == ["Publisher._build_step", "Publisher._save_step"]
    assert len(steps) == steps.count("Reader.first") + 4
    assert source.calls  # the reads were sent


async def test_a_reselect_step_that_fails_raises_in_the_republish_after_it(
    make_poller: MakePoller, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = make_poller(revisit_minutes=5)
    await p.poll(ACC)

    def broken(*_: object) -> None:
        raise RuntimeError("the zeroing failed")

    monkeypatch.setattr(exposure, "start_at_zero", broken)
    p.publisher.reselect()  # queued on the worker at once, as a reload does
    with pytest.raises(RuntimeError, match="the zeroing failed"):
        await p.publisher.republish()
    assert await p.publisher.republish() >= 0  # raised once, not again
