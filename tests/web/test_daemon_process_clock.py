"""Where the process clock itself is under test: the daemon built without an injected clock
(``SystemClock``), with freezegun setting ``time.time()`` and ``datetime.now()``.

Everything else in the suite injects a ``FakeClock``; these tests prove the wiring that a
FakeClock would bypass: the system clock into the traffic windows and the lag, into the state
file's timestamp, into the log lines' timestamps and into the login token's renewal. Frozen
with ``real_asyncio=True``: the event loop's timers (aiohttp's timeouts among them) keep real
monotonic time; time moves only with ``frozen.move_to`` / ``frozen.tick``. The real
``AsyncIOScheduler`` on a frozen clock: tests/runtime/test_scheduler_loop.py.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import freezegun
import pytest
import structlog
from freezegun import freeze_time
from freezegun.config import DEFAULT_IGNORE_LIST

from exporter.config import parse_config
from exporter.runtime.scheduler import EXACT
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import SystemClock
from exporter.support.logs import configure_logging
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.traffic.windows import MINUTE, last_ready_minute
from exporter.upstream.auth import RENEW_AT_FRACTION, PasswordLogin
from tests.rig.daemon import running
from tests.rig.schedule import run_due

START = datetime(2026, 1, 1, 17, 0, 5, tzinfo=UTC)
ACCOUNT = "demo-media"


@pytest.fixture
def frozen_threads_too() -> Iterator[None]:
    """freezegun gives real time to code called from ``threading`` and ``queue`` (its default
    ignore list): the refresh thread (``support/offloop.py``), which writes the state file,
    would read the real clock. Frozen for it too while the test runs."""
    freezegun.configure(
        default_ignore_list=[m for m in DEFAULT_IGNORE_LIST if m not in ("threading", "queue")]
    )
    yield
    freezegun.configure(default_ignore_list=list(DEFAULT_IGNORE_LIST))


def test_log_lines_are_stamped_with_the_process_clock_structlog_and_stdlib_alike() -> None:
    buf = io.StringIO()
    with freeze_time(START + timedelta(microseconds=250_000)):
        configure_logging(level="info", fmt="json", stream=buf)
        structlog.get_logger().info("ours")
        logging.getLogger("aiohttp.server").warning("theirs")
    stamps = [json.loads(line)["ts"] for line in buf.getvalue().splitlines()]
    assert stamps == ["2026-01-01T17:00:05.250000Z"] * 2


async def test_a_login_token_is_renewed_when_the_process_clock_reaches_its_renewal() -> None:
    lifetime = 3600.0
    issued: list[datetime] = []

    async def login(username: str, password: str) -> tuple[str, float]:
        issued.append(datetime.now(UTC))
        return f"token-{len(issued)}", lifetime

    with freeze_time(START, real_asyncio=True) as frozen:
        auth = PasswordLogin("ops", "secret", login, SystemClock())
        first = await auth.token()
        frozen.tick(lifetime * RENEW_AT_FRACTION - 1)
        assert await auth.token() == first
        frozen.tick(1)
        renewed = await auth.token()
    assert (first, renewed) == ("token-1", "token-2")
    assert issued == [START, START + timedelta(seconds=lifetime * RENEW_AT_FRACTION)]


@pytest.mark.usefixtures("frozen_threads_too")
async def test_the_daemon_on_the_system_clock_reads_its_windows_and_stamps_its_state_by_it(
    tmp_path: Path,
) -> None:
    """The daemon without a clock: the traffic windows, the lag and the state file follow the
    (frozen) process clock, as the simulator on the same clock does."""
    state_file = tmp_path / "traffic-state.json"
    with freeze_time(START, real_asyncio=True) as frozen:
        sim = Simulator(SimConfig(accounts=(ACCOUNT,), resources_per_account=2))
        sim_runner = await serve(sim)
        settings = parse_config(
            {
                "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
                "accounts": [{"name": ACCOUNT}],
                "traffic": {"state_file": str(state_file)},
                "log": {"level": "error", "format": "json"},
            },
            env={},
        )
        try:
            async with running(settings, timing=EXACT) as started:  # no clock: the process's
                ctx, scheduler = started.ctx, started.service.scheduler
                ctx.client.backoff_seconds = 0.0
                end = START.timestamp() + 6 * MINUTE
                polled: list[float] = []
                with structlog.testing.capture_logs():
                    while (due := scheduler.next_due()) is not None and due < end:
                        frozen.move_to(datetime.fromtimestamp(due, UTC))
                        polled.append(due)
                        await run_due(scheduler)
                registry = ctx.metrics.registry
                lag = registry.get_sample_value(
                    "cdnvideo_traffic_lag_seconds", {"account": ACCOUNT}
                )
                saved = registry.get_sample_value("cdnvideo_state_last_save_timestamp_seconds")
        finally:
            await sim_runner.cleanup()
    traffic_polls = [t for t in polled if (t - START.timestamp()) % 15.0 == 0]
    last = traffic_polls[-1]
    delay = TRAFFIC_SECTION.of(settings).delay_seconds
    assert lag == last - (last_ready_minute(last, delay) + MINUTE)
    doc = json.loads(state_file.read_bytes())
    assert saved in polled
    assert doc["saved_at"] in polled
