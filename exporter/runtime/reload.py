"""Reload: re-read the config file (SIGHUP, ``POST /-/reload``) and apply what can change live.

Applied without a restart, keeping every counter, ledger and cursor: the account list (accounts
added are scheduled, accounts removed forgotten, ``dvr_streams`` follow), the poll intervals of
restream, DVR and talking head, ``metrics.include`` / ``metrics.exclude``, and rotated
secrets: a new static ``upstream.token``, ``upstream.password`` (same ``username``) and the
admin tokens (a rotated ``*_file``; the remote writer reads its files before each request).
Every other key keeps its running value until the next restart; the reload log line names
those that changed (docs/deploy.md lists both). A file that does not pass
check-config is refused whole: the running config stays,
``cdnvideo_exporter_config_last_reload_successful`` is
0 until a good reload, and the error is logged and returned.

The file and its secret files are read on a worker thread, the whole load bounded by
``LOAD_DEADLINE_SECONDS`` (each secret file by its own deadline, so the error names its key):
a FIFO or a hung mount never stops the event loop serving ``/healthz``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from exporter.config import ConfigError, Settings
from exporter.runtime.registry import declarations
from exporter.support.logs import Redactor
from exporter.support.offloop import aside

log = structlog.get_logger("exporter.runtime.reload")


@dataclass(frozen=True)
class ReloadOutcome:
    ok: bool
    message: str
    applied: tuple[str, ...] = ()
    needs_restart: tuple[str, ...] = ()


def changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two settings objects (sections walked,
    a list of accounts compared whole; the declared areas' sections under their own keys)."""
    out: list[str] = []
    for f in dataclasses.fields(old):
        a, b = getattr(old, f.name), getattr(new, f.name)
        key = f"{prefix}{f.name}"
        if isinstance(a, Mapping) and isinstance(b, Mapping) and a.keys() == b.keys():
            for name in a:  # Settings.areas: each section as if it were a field
                out += changed_keys(a[name], b[name], f"{prefix}{name}.")
        elif dataclasses.is_dataclass(a) and not isinstance(a, type) and f.name != "shard":
            out += changed_keys(a, b, key + ".")
        elif a != b:
            out.append(key)
    return out


def live_settings(old: Settings, new: Settings) -> Settings:
    """``old`` with the keys a reload applies taken from ``new``: the accounts, the metric
    selection, and what each area's declaration says of its section (``live``)."""
    accounts = new.accounts if (old.accounts is None) == (new.accounts is None) else old.accounts
    upstream, admin = old.upstream, old.admin
    if old.upstream.token and new.upstream.token:  # a rotated token (file): sent from now on
        upstream = dataclasses.replace(upstream, token=new.upstream.token)
    elif _same_login(old, new):  # a rotated password (file): the next login uses it
        upstream = dataclasses.replace(upstream, password=new.upstream.password)
    if old.admin.enabled and new.admin.enabled:  # rotated tokens (files): checked from now on
        admin = dataclasses.replace(
            admin, read_token=new.admin.read_token, write_token=new.admin.write_token
        )
    live = dataclasses.replace(
        old, accounts=accounts, metrics=new.metrics, upstream=upstream, admin=admin
    )
    for area in declarations():
        live = area.live(live, new)
    return live


def _same_login(old: Settings, new: Settings) -> bool:
    o, n = old.upstream, new.upstream
    return not o.token and not n.token and o.username == n.username and bool(n.password)


# The longest a reload waits for the config file and its secret files (each secret file has
# its own, shorter deadline: config.secretfiles.READ_DEADLINE_SECONDS).
LOAD_DEADLINE_SECONDS = 30.0


class Reloader:
    """Loads the config (``load``: the file as the flags override it, on a worker thread) and
    hands the live part to ``apply``; one reload at a time (a lock)."""

    def __init__(
        self,
        load: Callable[[], Settings],
        current: Callable[[], Settings],
        apply: Callable[[Settings], None],
        report: Callable[[bool], None],
        rendered: Callable[[], Awaitable[object]],
    ) -> None:
        self._load = load
        self._current = current
        self._apply = apply
        self._report = report
        self._rendered = rendered
        self._lock = asyncio.Lock()
        self.deadline = LOAD_DEADLINE_SECONDS

    async def reload(self) -> ReloadOutcome:
        """Reload, then render ``/metrics`` at once (``rendered``: the selection applied to what
        is published, the reload gauges showing the outcome)."""
        async with self._lock:
            outcome = await self._reload()
            await self._rendered()
        return outcome

    async def _reload(self) -> ReloadOutcome:
        old = self._current()
        try:
            new = await asyncio.wait_for(aside(self._load), self.deadline)
        except (ConfigError, TimeoutError) as exc:
            if isinstance(exc, TimeoutError):
                exc = ConfigError(
                    f"config file: not read within {self.deadline:g} s (a hung mount?)"
                )
            message = Redactor(old.secrets()).text(str(exc))
            self._report(False)
            log.error("config_reload_failed", error=message, kept="the running config")
            return ReloadOutcome(False, message)
        effective = live_settings(old, new)
        applied = tuple(changed_keys(old, effective))
        restart = tuple(k for k in changed_keys(effective, new) if k not in applied)
        self._apply(effective)
        self._report(True)
        log.info("config_reloaded", applied=",".join(applied), needs_restart=",".join(restart))
        parts = [f"applied: {', '.join(applied) or 'nothing changed'}"]
        if restart:
            parts.append(f"changed but applied only at the next restart: {', '.join(restart)}")
        return ReloadOutcome(True, "; ".join(parts), applied, restart)
