"""The bench's slice timer: the longest callback the event loop ran, and which one."""

from __future__ import annotations

import asyncio
import time
from asyncio import events

from bench.exporter_proc import SliceWatch


def _hold(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


async def _short_steps() -> None:
    for _ in range(5):
        _hold(0.002)
        await asyncio.sleep(0)


async def _one_long_step() -> None:
    await asyncio.sleep(0)
    _hold(0.030)  # one slice: nothing awaited in between
    await asyncio.sleep(0)


def test_the_longest_slice_is_the_step_that_held_the_loop_and_is_named() -> None:
    async def main() -> SliceWatch:
        with SliceWatch() as watch:
            await asyncio.gather(_short_steps(), _one_long_step(), _short_steps())
        return watch

    original = events.Handle._run
    watch = asyncio.run(main())
    assert watch.worst >= 0.030
    assert watch.where == "_one_long_step"
    assert events.Handle._run is original  # the timer is removed on leaving


def test_many_short_steps_are_not_one_slice() -> None:
    """Five steps of 2 ms each with awaits between them are five slices, not one of 10 ms
    (nor the loop's whole turn)."""

    async def main() -> SliceWatch:
        with SliceWatch() as watch:
            await _short_steps()
        return watch

    watch = asyncio.run(main())
    assert watch.worst >= 0.002
    assert watch.worst < 0.010
