"""The remote writer of a config: its store beside the traffic state file, its own session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import aiohttp
import structlog

from exporter.config import Settings
from exporter.remotewrite.metrics import OUTCOMES, RemoteWriteMetrics
from exporter.remotewrite.sender import Sender
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION, RemoteWriteSettings
from exporter.remotewrite.store import MinuteStore
from exporter.remotewrite.writer import RemoteWriter
from exporter.support.clock import Clock
from exporter.traffic.final import FinalMinutes
from exporter.traffic.settings import TRAFFIC_SECTION

log = structlog.get_logger("exporter.remotewrite")


def _said(event: str, effect: str) -> Callable[[str, OSError], None]:
    """A store problem with a file, as one error line naming the file and what follows."""

    def say(path: str, exc: OSError) -> None:
        log.error(event, path=path, problem=exc.strerror or str(exc), effect=effect)

    return say


_log_failed_write = _said(
    "remote_write_store_failed", "kept in memory only: a restart now would forget it"
)
_log_unreadable = _said("remote_write_minute_unreadable", "left out: this minute is not written")


def store_dir(traffic_state_file: str) -> str:
    """Where pending and written minutes are kept: beside the traffic state file ("" = in
    memory only, as the traffic ledger then is)."""
    return f"{traffic_state_file}.remote-write" if traffic_state_file else ""


def build_writer(
    settings: RemoteWriteSettings,
    traffic_state_file: str,
    session: aiohttp.ClientSession,
    clock: Clock,
    metrics: RemoteWriteMetrics,
    wants: Callable[[str], bool],
) -> RemoteWriter:
    for outcome in OUTCOMES:  # every outcome exposed at 0, so the first one is an increase
        metrics.remote_write_samples.labels(outcome)
    store = MinuteStore(
        store_dir(traffic_state_file),
        settings.max_age_minutes * 60.0,
        failed=_log_failed_write,
        unreadable=_log_unreadable,
    )
    return RemoteWriter(settings, store, Sender(settings, session).post, clock, metrics, wants)


class _Told(Protocol):
    final_minutes: FinalMinutes | None


def attach_writer(
    settings: Settings,
    session: aiohttp.ClientSession,
    clock: Clock,
    metrics: RemoteWriteMetrics,
    wants: Callable[[str], bool],
    reader: _Told,
) -> RemoteWriter:
    """The remote writer of ``settings`` (its section enabled), its store beside the traffic
    state file, told each final traffic minute by ``reader`` (the traffic read step): how the
    daemon wires it, and the simulation with it."""
    writer = build_writer(
        REMOTE_WRITE_SECTION.of(settings),
        TRAFFIC_SECTION.of(settings).state_file,
        session,
        clock,
        metrics,
        wants,
    )
    reader.final_minutes = writer
    return writer
