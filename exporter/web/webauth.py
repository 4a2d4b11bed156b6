"""Apply a web config to requests: basic auth (bcrypt, cached), client-cert SANs, headers.

Basic auth covers ``/metrics``, the landing page and everything else except:

- ``/api/v1``: the admin API keeps its own bearer tokens (the same ``Authorization`` header
  cannot carry both); its OpenAPI document needs either a password or a token;
- ``/healthz`` and ``/readyz``: probes stay open so a kubelet or load balancer needs no
  password; without valid credentials ``/readyz`` answers with its status code and
  ``{"ready": ...}`` only, never the account names.

A bcrypt check is slow by design (docs/performance.md#figures-behind-the-code), so, as in
the exporter-toolkit, a verdict is cached per (user, hash, password) digest, and checks run
off the event loop, a few at a time (``BasicAuth``). Right passwords stay remembered across a
reload for every user whose hash did not change, so a flood of guesses queued after a reload
cannot make a scrape that passed before wait. An unknown user costs a check against a dummy
hash at the lowest cost in the file (the highest would let a flood of unknown names cost more
than any real user's check).
The file's ``rate_limit`` (a token bucket, 429 when empty) comes first and counts every
request but the probes (``/healthz``, ``/readyz``): unlike the toolkit's, so that a flood of
requests cannot make a kubelet restart a healthy exporter.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import hashlib
import re
import ssl
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import bcrypt
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from exporter.support.offloop import aside
from exporter.web.webconfig import WebConfig
from exporter.web.webreload import LiveWebConfig

log = structlog.get_logger("exporter.web.auth")

OPEN_PATHS = ("/healthz", "/readyz", "/-/healthy", "/-/ready")
OWN_AUTH_PREFIX = "/api/v1"
# The admin API's own document: it names the accounts, so basic auth (or a bearer token,
# which the admin app checks itself) guards it like the rest.
OPENAPI_PATH = OWN_AUTH_PREFIX + "/openapi.json"
CACHE_SIZE = 256  # wrong guesses remembered (a repeated one costs no second bcrypt check)
GOOD_PER_USER = 4  # right passwords remembered per user (apart: guesses cannot evict them)
BCRYPT_WORKERS = 2  # bcrypt checks running at once; the rest wait their turn ...
BCRYPT_QUEUE = 64  # ... up to this many; beyond, 429 without a check
REALM = 'Basic realm="cdnvideo-exporter", charset="UTF-8"'
DUMMY_PASSWORD = b"cdnvideo-exporter: no such user"
_BCRYPT_COST = re.compile(rb"\$2[abxy]?\$([0-9]{2})\$")

AUTHENTICATED: web.RequestKey[bool] = web.RequestKey("basic_auth_ok", bool)


class AuthBusy(Exception):
    """Too many bcrypt checks waiting: the request is refused without one."""


@functools.lru_cache(maxsize=32)
def dummy_hash(cost: int) -> bytes:
    """A bcrypt hash of no user's password at ``cost``: an unknown user is checked against it,
    so it costs what a known one costs and timing does not tell which user names exist."""
    return bcrypt.hashpw(DUMMY_PASSWORD, bcrypt.gensalt(cost))


def _cost(hashed: bytes) -> int:
    found = _BCRYPT_COST.match(hashed)
    return int(found.group(1)) if found else 10


class BasicAuth:
    """Check ``Authorization: Basic`` against bcrypt hashes, remembering verdicts.

    A right password is remembered apart from wrong ones (a flood of guesses cannot evict it),
    so a scrape that passed once answers without waiting whatever else arrives. Checks that
    need bcrypt run ``BCRYPT_WORKERS`` at a time in worker threads; concurrent checks of the
    same credentials share one; more than ``BCRYPT_QUEUE`` waiting raise ``AuthBusy``.
    """

    def __init__(self, users: dict[str, bytes], before: BasicAuth | None = None) -> None:
        self.users = users
        # Verdicts are keyed by (user, hash, password): one remembered from ``before`` (the
        # config in force until a reload) still holds for a user whose hash is the same.
        self._good: dict[str, OrderedDict[bytes, None]] = {}
        self._bad: OrderedDict[bytes, None] = OrderedDict()
        if before is not None:
            self._good = {
                user: OrderedDict(good)
                for user, good in before._good.items()
                if users.get(user) == before.users.get(user)
            }
            self._bad = OrderedDict(before._bad)
        self._running: dict[bytes, asyncio.Future[bool]] = {}
        self._workers = asyncio.Semaphore(BCRYPT_WORKERS)
        self._dummy_cost = min((_cost(h) for h in users.values()), default=10)
        self.checks = 0  # bcrypt comparisons started (the rest came from the cache)

    @staticmethod
    def credentials(header: str) -> tuple[str, str] | None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, sep, password = decoded.partition(":")
        return (user, password) if sep else None

    async def allows(self, header: str) -> bool:
        found = self.credentials(header)
        if found is None:
            return False
        user, password = found
        hashed = self.users.get(user)
        key = hashlib.sha256(b"\0".join((user.encode(), hashed or b"", password.encode()))).digest()
        if key in self._good.get(user, ()):
            return True
        if key in self._bad:
            self._bad.move_to_end(key)
            return False
        running = self._running.get(key)
        if running is not None:  # the same credentials are being checked: share the verdict
            try:
                return await asyncio.shield(running)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not running.cancelled() or (task is not None and task.cancelling()):
                    raise
                return await self.allows(header)  # the first one's check was cut short
        if len(self._running) >= BCRYPT_WORKERS + BCRYPT_QUEUE:
            raise AuthBusy
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            verdict = await self._check(password, hashed)
            future.set_result(verdict)
        finally:
            del self._running[key]
            if not future.done():  # cut short or failed: whoever shares it checks again
                future.cancel()
        self._remember(user, key, verdict)
        return verdict

    async def _check(self, password: str, hashed: bytes | None) -> bool:
        async with self._workers:
            self.checks += 1
            if hashed is None:  # unknown user: a check against the dummy hash, then no
                cost = self._dummy_cost
                await aside(lambda: _bcrypt_ok(password, dummy_hash(cost)))
                return False
            return await aside(_bcrypt_ok, password, hashed)

    def _remember(self, user: str, key: bytes, verdict: bool) -> None:
        if verdict:
            good = self._good.setdefault(user, OrderedDict())
            good[key] = None
            while len(good) > GOOD_PER_USER:
                good.popitem(last=False)
            return
        self._bad[key] = None
        while len(self._bad) > CACHE_SIZE:
            self._bad.popitem(last=False)


class TokenBucket:
    """The toolkit's ``rate_limit``: one request per ``interval`` seconds, bursts of ``burst``."""

    def __init__(
        self, interval: float, burst: int, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_second = 1.0 / interval
        self.burst = burst
        self.tokens = float(burst)
        self.now = now
        self.last = now()

    def allow(self) -> bool:
        t = self.now()
        self.tokens = min(float(self.burst), self.tokens + (t - self.last) * self.per_second)
        self.last = t
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def _bcrypt_ok(password: str, hashed: bytes) -> bool:
    try:
        return bcrypt.checkpw(password.encode(), hashed)
    except ValueError:  # longer than bcrypt's 72 bytes, or a hash bcrypt cannot read
        return False


def _san_values(peercert: object) -> set[str]:
    if not isinstance(peercert, dict):
        return set()
    return {str(value) for _kind, value in peercert.get("subjectAltName", ())}


class _Enforced:
    """What the middleware checks, rebuilt from the live config after each reload."""

    auth: BasicAuth | None
    bucket: TokenBucket | None

    def __init__(self, config: WebConfig, before: _Enforced | None = None) -> None:
        kept = before.auth if before else None  # verdicts a reload keeps (BasicAuth)
        self.auth = BasicAuth(dict(config.users), kept) if config.users else None
        self.sans = set(config.allowed_sans) if config.allowed_sans is not None else None
        self.rate_limit = config.rate_limit
        if before is not None and before.rate_limit == config.rate_limit:
            self.bucket = before.bucket  # a reload does not refill the bucket
        else:
            self.bucket = TokenBucket(*config.rate_limit) if config.rate_limit else None


def web_config_middleware(live: LiveWebConfig) -> Middleware:
    """The aiohttp middleware that enforces the live config on every request."""
    current = [live.generation, _Enforced(live.config)]

    def enforced() -> _Enforced:
        generation, old = current
        assert isinstance(old, _Enforced)
        if generation == live.generation:
            return old
        new = _Enforced(live.config, before=old)
        current[:] = [live.generation, new]
        return new

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if _older_tls(request, live):
            # Its client certificate was checked against the trust of a config no longer in
            # force: closed unanswered, so the client connects again (a Go client, such as
            # Prometheus, retries an idempotent request on a new connection by itself) and
            # the new handshake checks the certificate against the client CAs in force.
            request.protocol.force_close()
            raise web.HTTPMisdirectedRequest(text="the web config changed: connect again\n")
        now = enforced()
        probe = request.path in OPEN_PATHS  # a probe flood must not fail the probes
        if now.bucket is not None and not probe and not now.bucket.allow():
            raise web.HTTPTooManyRequests(text="429 Too Many Requests\n")
        if now.sans is not None:
            transport = request.transport
            peer = transport.get_extra_info("peercert") if transport else None
            if not _san_values(peer) & now.sans:
                raise web.HTTPForbidden(text="client certificate: no allowed SAN\n")
        if now.auth is None:
            request[AUTHENTICATED] = True
            return await handler(request)
        path = request.path
        header = request.headers.get("Authorization", "")
        own_auth = path == OWN_AUTH_PREFIX or path.startswith(OWN_AUTH_PREFIX + "/")
        if own_auth and not header.lower().startswith("basic "):
            # Bearer tokens are the admin API's; its document takes either (see OPENAPI_PATH).
            request[AUTHENTICATED] = False
            return await handler(request)
        try:
            ok = bool(header) and await now.auth.allows(header)
        except AuthBusy:
            if path in OPEN_PATHS:  # a probe is answered as one without credentials
                request[AUTHENTICATED] = False
                return await handler(request)
            raise web.HTTPTooManyRequests(
                text="429 Too Many Requests: too many password checks waiting\n",
                headers={"Retry-After": "1"},
            ) from None
        request[AUTHENTICATED] = ok
        if ok or path in OPEN_PATHS or (own_auth and path != OPENAPI_PATH):
            return await handler(request)
        raise web.HTTPUnauthorized(text="401 Unauthorized\n", headers={"WWW-Authenticate": REALM})

    return middleware


def _older_tls(request: web.Request, live: LiveWebConfig) -> bool:
    """Whether the request came on a TLS connection made under an earlier web config (each
    config's context makes its own connections: ``LiveWebConfig.listener_tls``)."""
    transport = request.transport
    made = transport.get_extra_info("ssl_object") if transport is not None else None
    return isinstance(made, ssl.SSLObject) and made.context is not live.config.tls


def add_headers(
    live: LiveWebConfig,
) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """An ``on_response_prepare`` hook: the file's headers, where a handler set none itself
    (the landing page keeps its own stricter Content-Security-Policy)."""

    async def hook(request: web.Request, response: web.StreamResponse) -> None:
        for name, value in live.config.headers.items():
            response.headers.setdefault(name, value)

    return hook


WEB_CONFIG: web.AppKey[LiveWebConfig] = web.AppKey("web_config", LiveWebConfig)


def apply_web_config(
    app: web.Application, config: WebConfig, report: Callable[[bool], None] = lambda ok: None
) -> None:
    """Enforce ``config`` on ``app`` and follow changes of its files (TLS itself is the
    listener's: ``config.tls``); ``report`` hears whether each re-read applied."""
    live = app[WEB_CONFIG] = LiveWebConfig(config, report=report)
    app.middlewares.append(web_config_middleware(live))
    app.on_response_prepare.append(add_headers(live))
    app.cleanup_ctx.append(live.lifecycle)


def authenticated(request: web.Request) -> bool:
    """Whether the request passed basic auth (True when no web config asks for it)."""
    return bool(request.get(AUTHENTICATED, True))


def listener_tls(app: web.Application) -> ssl.SSLContext | None:
    """The context to serve ``app`` with: the live config's (None: plain HTTP)."""
    live = app.get(WEB_CONFIG)
    return live.listener_tls if live is not None else None
