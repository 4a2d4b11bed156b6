"""The refresh thread (support.offloop): the areas' replies parsed, built and rendered on one
thread off the event loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from exporter.dvr import poller as dvr_poller
from exporter.exposition import store as store_module
from exporter.restream import poller as restream_poller
from exporter.restream import reply as restream_reply
from tests.rig.areas import Rig, rig, series

__all__ = ["rig"]  # the fixture


async def test_a_refresh_parses_and_builds_on_one_thread_off_the_loop(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replies are parsed, digested and built into fragments, and the exposition rendered, on
    the one "refresh" thread (support.offloop), never on the event loop and never spread over
    several threads competing for the GIL."""
    threads: dict[str, set[str]] = {}

    def spy(module: object, name: str) -> None:
        real = getattr(module, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            threads.setdefault(name, set()).add(threading.current_thread().name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapped)

    spy(restream_reply, "parse_restream_resources")
    spy(restream_reply, "parse_restream_status")
    spy(restream_poller, "status_fragment")
    spy(restream_poller, "fold_histories")
    spy(dvr_poller, "dvr_fragment")
    spy(store_module.Store, "render_sync")
    await rig.poll_everything()
    samples = await rig.scrape()
    assert series(samples, "cdnvideo_dvr_alive")  # the polls did publish
    assert set(threads) == {
        "parse_restream_resources",
        "parse_restream_status",
        "status_fragment",
        "fold_histories",
        "dvr_fragment",
        "render_sync",
    }
    used = set().union(*threads.values())
    assert len(used) == 1, threads
    assert used.pop().startswith("refresh")
