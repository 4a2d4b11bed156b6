"""Apply a web config to requests: basic auth (bcrypt, cached), client-cert SANs, headers.

Basic auth covers ``/metrics``, the landing page and everything else except:

- ``/api/v1``: the admin API keeps its own bearer tokens (the same ``Authorization`` header
  cannot carry both);
- ``/healthz`` and ``/readyz``: probes stay open so a kubelet or load balancer needs no
  password; without valid credentials ``/readyz`` answers with its status code and
  ``{"ready": ...}`` only, never the account names.

A bcrypt check costs ~100 ms at cost 10, so, as in the exporter-toolkit, a verdict is cached
per (user, hash, password) digest and only one check runs at a time, off the event loop.
The file's ``rate_limit`` (a token bucket, 429 when empty) comes first and counts every
request, as in the toolkit.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import bcrypt
import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from exporter.web.webconfig import WebConfig
from exporter.web.webreload import LiveWebConfig

log = structlog.get_logger("exporter.web.auth")

OPEN_PATHS = ("/healthz", "/readyz")
OWN_AUTH_PREFIX = "/api/v1"
# bcrypt of "fakepassword" (the toolkit's): an unknown user costs as much as a known one, so
# timing does not tell which user names exist.
FAKE_HASH = b"$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
CACHE_SIZE = 256
REALM = 'Basic realm="cdnvideo-exporter", charset="UTF-8"'

AUTHENTICATED: web.RequestKey[bool] = web.RequestKey("basic_auth_ok", bool)


class BasicAuth:
    """Check ``Authorization: Basic`` against bcrypt hashes, remembering recent verdicts."""

    def __init__(self, users: dict[str, bytes]) -> None:
        self.users = users
        self._cache: OrderedDict[bytes, bool] = OrderedDict()
        self._lock = asyncio.Lock()
        self.checks = 0  # bcrypt comparisons actually run (the rest came from the cache)

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
        known = user in self.users
        hashed = self.users.get(user, FAKE_HASH)
        key = hashlib.sha256(b"\0".join((user.encode(), hashed, password.encode()))).digest()
        verdict = self._cache.get(key)
        if verdict is None:
            async with self._lock:
                self.checks += 1
                verdict = known and await asyncio.to_thread(_bcrypt_ok, password, hashed)
            self._cache[key] = verdict
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return verdict


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

    def __init__(self, config: WebConfig) -> None:
        self.auth = BasicAuth(dict(config.users)) if config.users else None
        self.sans = set(config.allowed_sans) if config.allowed_sans is not None else None
        self.bucket = TokenBucket(*config.rate_limit) if config.rate_limit else None
        self.rate_limit = config.rate_limit


def web_config_middleware(live: LiveWebConfig) -> Middleware:
    """The aiohttp middleware that enforces the live config on every request."""
    current = [live.generation, _Enforced(live.config)]

    def enforced() -> _Enforced:
        generation, old = current
        assert isinstance(old, _Enforced)
        if generation == live.generation:
            return old
        new = _Enforced(live.config)
        if new.rate_limit == old.rate_limit:
            new.bucket = old.bucket  # a reload does not refill the bucket
        current[:] = [live.generation, new]
        return new

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        now = enforced()
        if now.bucket is not None and not now.bucket.allow():
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
        if path == OWN_AUTH_PREFIX or path.startswith(OWN_AUTH_PREFIX + "/"):
            return await handler(request)
        header = request.headers.get("Authorization", "")
        ok = bool(header) and await now.auth.allows(header)
        request[AUTHENTICATED] = ok
        if ok or path in OPEN_PATHS:
            return await handler(request)
        raise web.HTTPUnauthorized(text="401 Unauthorized\n", headers={"WWW-Authenticate": REALM})

    return middleware


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


def apply_web_config(app: web.Application, config: WebConfig) -> None:
    """Enforce ``config`` on ``app`` and follow changes of its files (TLS itself is the
    listener's: ``config.tls``)."""
    live = app[WEB_CONFIG] = LiveWebConfig(config)
    app.middlewares.append(web_config_middleware(live))
    app.on_response_prepare.append(add_headers(live))
    app.cleanup_ctx.append(live.lifecycle)


def authenticated(request: web.Request) -> bool:
    """Whether the request passed basic auth (True when no web config asks for it)."""
    return bool(request.get(AUTHENTICATED, True))
