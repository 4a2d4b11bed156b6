"""The web config in force, re-read when its file or a file it names changes (no restart).

As the exporter-toolkit picks up a changed file at once, the daemon checks every
``RELOAD_SECONDS`` whether the web config file, the certificate, the key or the client CA
changed (a Kubernetes Secret update or a cert-manager renewal changes them). A changed file is
read and checked like at start-up: users, headers, SANs and the rate limit are swapped whole,
and the next handshakes use the new TLS context (certificate, key, client CAs: a CA removed
from the file is refused from then on). Each config's context does its own handshakes, so its
session tickets and session cache are its own: a TLS session made under an earlier config is
not resumed (a resumed session skips the client-certificate check, and would outlive a
rotated CA by the ticket's lifetime), and a connection made under it is closed at its next
request (``webauth``). It fails closed: a file that no longer passes the
checks (empty, truncated into bad YAML or a bad hash, unparsable) is logged, the last good
config stays in force and ``cdnvideo_exporter_web_config_last_reload_successful`` says 0
until a good one applies. Switching TLS on or off needs a restart (the listener is either
HTTPS or HTTP), and so does switching basic auth off: a file truncated to valid YAML without
its ``basic_auth_users`` must not open ``/metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import AsyncIterator, Callable

import structlog
from aiohttp import web

from exporter.config import ConfigError
from exporter.support.offloop import aside
from exporter.web.webconfig import WebConfig, load_web_config

log = structlog.get_logger("exporter.web.reload")

RELOAD_SECONDS = 5.0

Stamp = tuple[tuple[int, int] | None, ...]


def _stamps(files: tuple[str, ...]) -> Stamp:
    """(mtime, size) of each file (symlinks followed, as a mounted Secret's are)."""
    out: list[tuple[int, int] | None] = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


class _FollowingContext(ssl.SSLContext):
    """The listener's context: every connection is wrapped by the context of the config in
    force (``current()``), which then handshakes with its own certificate, client CAs, session
    tickets and session cache. This one never handshakes itself.

    OpenSSL seals tickets with the keys of the context a connection was made from, also when
    an SNI callback switches to another context during the handshake: so only a connection
    made from the new context drops the sessions of the old one.
    """

    _current: Callable[[], ssl.SSLContext]

    def __new__(cls, current: Callable[[], ssl.SSLContext]) -> _FollowingContext:
        following = super().__new__(cls, ssl.PROTOCOL_TLS_SERVER)
        following._current = current
        return following

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        """What asyncio's TLS transport calls for each connection (``loop.create_server``)."""
        return self._current().wrap_bio(incoming, outgoing, server_side, server_hostname, session)


class LiveWebConfig:
    """``config`` is the one in force; ``changed`` tells its readers to rebuild their state."""

    def __init__(
        self,
        config: WebConfig,
        load: Callable[[str], WebConfig] = load_web_config,
        report: Callable[[bool], None] = lambda ok: None,
    ):
        self.config = config
        self._report = report  # cdnvideo_exporter_web_config_last_reload_successful
        # The context to start the listener with (``webauth.listener_tls``): every connection
        # is made from the context of the config in force. A reload replaces certificate, key
        # and trust store (a CA can be taken away, not only added) and ends earlier sessions.
        self.listener_tls = None if config.tls is None else _FollowingContext(self._tls)
        self.generation = 0
        self._load = load
        self._stamps = _stamps(config.files)

    def check(self) -> bool:
        """Re-read the file when it or a file it names changed; True when a new one applies."""
        stamps = _stamps(self.config.files)
        if stamps == self._stamps or not self.config.path:
            return False
        self._stamps = stamps
        try:
            new = self._load(self.config.path)
        except ConfigError as exc:
            return self._refused(str(exc))
        if new.empty:
            return self._refused("the file is empty (emptied or being written?)")
        if (new.tls is None) != (self.listener_tls is None):
            return self._refused("TLS switched on or off: restart")
        if self.config.users and not new.users:
            # A truncated file can read as valid YAML without its users: fail closed.
            return self._refused("basic auth switched off (no basic_auth_users left): restart")
        self.config = new
        self._stamps = _stamps(new.files)
        self.generation += 1
        self._report(True)
        log.info("web_config_reloaded", file=new.path, basic_auth_users=len(new.users))
        for warning in new.warnings:
            log.warning("web_config_unsupported", detail=warning)
        return True

    def _refused(self, error: str) -> bool:
        log.error("web_config_reload_failed", error=error, kept="the last good config")
        self._report(False)
        return False

    def _tls(self) -> ssl.SSLContext:
        """The context of the config in force (TLS stays on: ``check`` refuses switching it)."""
        tls = self.config.tls
        assert tls is not None, "the listener serves TLS: a config without it is refused"
        return tls

    async def run(self, seconds: float = RELOAD_SECONDS) -> None:
        """Check every ``seconds``, off the event loop: a reload reads its files, checks
        password hashes and loads certificates (inline ones pass through temporary files)."""
        while True:
            await asyncio.sleep(seconds)
            await aside(self.check)

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """For ``app.cleanup_ctx``: the check runs while the app serves."""
        task = asyncio.create_task(self.run(), name="web-config-reload")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
