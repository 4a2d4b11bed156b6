"""The only code that talks to the platform: auth, timeouts, retries, counting, error parsing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import aiohttp
import structlog
from yarl import URL

from exporter import __version__
from exporter.config import UpstreamSettings
from exporter.support import jsonpieces
from exporter.support.clock import Clock, SystemClock
from exporter.support.logs import Redactor
from exporter.support.offloop import aside, off_loop
from exporter.upstream import models
from exporter.upstream.auth import PasswordLogin, StaticToken, TokenSource
from exporter.upstream.budget import RequestBudget
from exporter.upstream.endpoint import Endpoint, Lane, Params, declared
from exporter.upstream.errors import (
    UpstreamError,
    body_status,
    connection_failure,
    error_message,
    is_error_body,
    says_rate_limited,
    says_token_refused,
    status_text,
)
from exporter.upstream.metrics import UpstreamMetrics
from exporter.upstream.reply import Reply

# A read meeting a 5xx, a timeout or a connection error is sent again this many times.
READ_RETRIES = 2

log = structlog.get_logger("exporter.upstream")
T = TypeVar("T")


TOKEN_PATH = "/app/oauth/v1/token/"
ACCOUNTS_PATH = "/app/inventory/v1/accounts/"
AUTH = "CDN-AUTH-TOKEN"
# Bodies larger than this are decoded in a worker thread, an element at a time (jsonpieces).
DECODE_OFF_LOOP_BYTES = 64 * 1024
# Reply headers kept on a Reply, under these names whatever case the server sent them in.
# (`Date` has its own field, Reply.date, read by the clock-skew measurement.)
KEPT_HEADERS = frozenset({"Retry-After"})


def minute(ts: float) -> str:
    """Unix seconds -> the metrics API's ``YYYY-MM-DDThh:mm:00`` (UTC)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:00")


USER_AGENT = f"cdnvideo-exporter/{__version__}"


class UpstreamClient:
    """Sends the platform's requests: an area's typed reads go through ``read`` (the endpoint
    its ``reply.py`` declares), the admin pass-through through ``Operations``.

    Reads (GET) are retried with jittered backoff on 5xx, timeouts and connection errors;
    nothing else is retried. A refused token (401 with or without a body, or a 403 saying the
    token is invalid or expired) renews a login token once and the request is sent once more;
    a static token cannot be renewed, so the request fails and one line says so.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        settings: UpstreamSettings,
        metrics: UpstreamMetrics | None = None,
        clock: Clock | None = None,
        redactor: Redactor | None = None,
        retries: int = READ_RETRIES,
        backoff_seconds: float = 0.5,
        timer: Callable[[], float] = time.perf_counter,
        admin_concurrency: int = 2,
    ) -> None:
        self._session = session
        self._timer = timer  # times each request for the latency histogram
        self._base = str(URL(settings.base_url.rstrip("/")))
        self._timeout = aiohttp.ClientTimeout(total=settings.timeout_seconds)
        # Upstream slots per lane: the pollers' (upstream.max_concurrency) and the admin
        # surface's own (admin.upstream_concurrency), so pollers holding every slot of theirs
        # never make a person wait.
        self._lanes: dict[Lane, asyncio.Semaphore] = {
            "poll": asyncio.Semaphore(settings.max_concurrency),
            "admin": asyncio.Semaphore(admin_concurrency),
        }
        self._metrics = metrics
        self._clock = clock or SystemClock()
        self._redactor = redactor
        self.retries = retries
        self.backoff_seconds = backoff_seconds
        self.budget = RequestBudget(settings.max_requests_per_minute, self._clock, metrics)
        # Accounts whose last request got 403 "no access" while the token was good.
        self.no_access: set[str] = set()
        self.auth: TokenSource
        if settings.token:
            self.auth = StaticToken(settings.token)
        else:
            self.auth = PasswordLogin(settings.username, settings.password, self.login, self._clock)

    def replace_token(self, token: str) -> None:
        """Send the static ``token`` from now on (a reload found a rotated token file); a
        login's tokens are the login's business, so nothing changes there."""
        if isinstance(self.auth, StaticToken):
            self.auth.replace(token)

    def replace_password(self, password: str) -> None:
        """Log in with ``password`` from the next login on (a reload found a rotated
        password file); a static token has none, so nothing changes there."""
        if isinstance(self.auth, PasswordLogin):
            self.auth.replace_password(password)

    def deadline(self) -> float:
        """The longest one call may take in seconds: every attempt's timeout, more than the
        back-off between them at its longest (each wait is at most 1.5 x its step, and the steps
        double), and a second of slack. What a caller waiting on the call (the admin API)
        allows before it answers 504 itself."""
        timeout = self._timeout.total or 0.0
        backoff = self.backoff_seconds * float(2**self.retries) * 1.5
        return timeout * (self.retries + 1) + backoff + 1.0

    # --- core -------------------------------------------------------------------------------
    async def _send(
        self,
        area: str,
        method: str,
        path: str,
        params: Params,
        body: Any,
        headers: Mapping[str, str],
        form: Mapping[str, str] | None = None,
        lane: Lane = "poll",
        keep_raw: bool = False,
    ) -> Reply:
        # Path segments are quoted by seg(); encoded=True keeps yarl from re-normalising them.
        url = URL(self._base + path, encoded=True)
        async with self._lanes[lane]:  # waiting for a slot is not upstream latency
            started = self._timer()
            try:
                status, raw, ctype, date, reply_headers = await self._exchange(
                    method, url, params, body, headers, form
                )
            except TimeoutError:
                self._count(area, "timeout", started)
                raise UpstreamError(area, "timeout", f"{method} {path} timed out") from None
            except (aiohttp.ClientError, OSError) as exc:
                self._count(area, "connection_error", started)
                raise UpstreamError(
                    area, "connection", f"{method} {path} failed: {connection_failure(exc)}"
                ) from None
        data: Any = None
        if keep_raw and 200 <= status < 300 and len(raw) > DECODE_OFF_LOOP_BYTES:
            # decoded where the caller processes it (``verdict`` counts what it was)
            self._observe(area, started)
            return Reply(
                status,
                raw,
                None,
                ctype,
                date,
                received_at=self._clock.time(),
                headers=reply_headers,
                decoded=False,
            )
        if len(raw) > DECODE_OFF_LOOP_BYTES:
            # a refresh's reply on the refresh thread; an admin reply on the request lane
            decode = aside if lane == "admin" else off_loop
            data = await decode(_decode, raw, jsonpieces.loads)
        elif raw:
            data = _decode(raw)
        self._count(area, _label(status, raw, data), started)
        return Reply(
            status, raw, data, ctype, date, received_at=self._clock.time(), headers=reply_headers
        )

    async def _exchange(
        self,
        method: str,
        url: URL,
        params: Params,
        body: Any,
        headers: Mapping[str, str],
        form: Mapping[str, str] | None,
    ) -> tuple[int, bytes, str, str, dict[str, str]]:
        """One HTTP request and its answer read whole: status, body, ``Content-Type``,
        ``Date`` and the ``KEPT_HEADERS``. Raises what aiohttp raises (no answer)."""
        async with self._session.request(
            method,
            url,
            params=params,
            json=body if form is None and body is not None else None,
            data=form,
            headers={"User-Agent": USER_AGENT, **headers},
            timeout=self._timeout,
            allow_redirects=False,
        ) as resp:
            raw = await resp.read()
            ctype = resp.headers.get("Content-Type", "")
            date = resp.headers.get("Date", "")
            kept = {h: resp.headers[h] for h in KEPT_HEADERS if h in resp.headers}
            return resp.status, raw, ctype, date, kept

    def _count(self, area: str, label: str, started: float) -> None:
        self._observe(area, started)
        if self._metrics is not None:
            self._metrics.upstream_requests.labels(area, label).inc()

    def _observe(self, area: str, started: float) -> None:
        if self._metrics is not None:
            self._metrics.upstream_duration.labels(area).observe(self._timer() - started)

    def verdict(self, area: str, reply: Reply, data: Any) -> bool:
        """What a reply left undecoded (``request(raw=True)``) was, once ``data`` is its
        decoded body (None: not JSON): counted as ``_send`` counts every other reply (from
        any thread). True: a body about a rate limit, which backs the account off
        (``budget.signal``, on the loop) as ``request`` does for the others."""
        if self._metrics is not None:
            label = _label(reply.status, reply.body, data)
            self._metrics.upstream_requests.labels(area, label).inc()
        return _rate_limited(dataclasses.replace(reply, data=data))

    async def request(
        self,
        area: str,
        method: str,
        path: str,
        params: Params = None,
        body: Any = None,
        retry: bool | None = None,
        account: str = "",
        budgeted: bool = True,
        lane: Lane = "poll",
        may_retry: MayRetry | None = None,
        raw: bool = False,
    ) -> Reply:
        """Send one authenticated request; return the reply whatever its status.

        Raises UpstreamError only when there is no reply (timeout, connection, no token), and
        Postponed when ``account``'s request budget cannot afford it (unless not ``budgeted``:
        the request is sent and counted). A rate-limit answer backs the account off.
        Retries GETs on 5xx/timeouts/connection errors unless ``retry`` is False; each retry
        only when ``may_retry`` (when given) allows it: a retry is a request, and an allowance
        that counts requests spends one on it. ``raw``: a large 2xx body comes back
        undecoded (``Reply.decoded``), for the caller to decode where it processes it.
        """
        retry = method == "GET" if retry is None else retry and method == "GET"
        attempts = 1 + (self.retries if retry else 0)
        renewed = False
        attempt = 0
        while True:
            attempt += 1
            token = await self.auth.token()
            self._spend(account, area, method, budgeted)
            try:
                reply = await self._send(
                    area, method, path, params, body, {AUTH: token}, lane=lane, keep_raw=raw
                )
            except UpstreamError as exc:
                if attempt < attempts and exc.retryable and await _allowed(may_retry):
                    await self._backoff(attempt, area, path, exc.message)
                    continue
                raise
            if not renewed and says_token_refused(reply.status, error_message(reply.data)):
                renewed = True
                if await self._renewed(reply, token, account):
                    attempt -= 1
                    continue
            elif reply.ok:
                self.no_access.discard(account)
                self.auth.accepted(token)
            if _rate_limited(reply) and lane != "admin":
                # The pollers back off on their own rate limits only: an admin request's 429
                # goes back to its caller and pauses nothing.
                self.budget.signal(account, area, reply.retry_after)
            if reply.status >= 500 and attempt < attempts and await _allowed(may_retry):
                await self._backoff(attempt, area, path, f"HTTP {reply.status}")
                continue
            return reply

    def _spend(self, account: str, area: str, method: str, budgeted: bool) -> None:
        """One request of ``account`` (none: no account) against its budget: taken when
        ``budgeted`` (Postponed when it cannot afford it), else spent by a change alone."""
        if account:
            if budgeted:
                self.budget.take(account, area)
            elif method != "GET":  # an admin change; admin reads have their own budget
                self.budget.spend(account)

    async def _renewed(self, reply: Reply, token: str, account: str) -> bool:
        """A reply refusing ``token``: True when the token was renewed (the request is sent
        again). A good token refused for an account it has no access to notes the account."""
        message = error_message(reply.data)
        if await self._no_access_only(reply.status, message, token):
            self.no_access.add(account)  # the token is good: the account is unknown
            return False
        return await self.auth.expired(token)

    async def _no_access_only(self, status: int, message: str | None, token: str) -> bool:
        """Whether a 403 "Invalid token or no access" means no access to the account asked
        for, not a refused token: the account list (one request) accepts the same token."""
        if status != 403 or "no access" not in (message or "").lower():
            return False
        try:
            probe = await self._send("auth", "GET", ACCOUNTS_PATH, None, None, {AUTH: token})
        except UpstreamError:
            return False
        return probe.ok and not is_error_body(probe.data)

    async def _backoff(self, attempt: int, area: str, path: str, why: str) -> None:
        delay = self.backoff_seconds * (2 ** (attempt - 1)) * (0.5 + random.random())
        log.info("upstream_retry", area=area, path=path, reason=why, delay=round(delay, 2))
        await asyncio.sleep(delay)

    async def get_json(self, area: str, path: str, params: Params = None, account: str = "") -> Any:
        """GET and return the JSON body, raising UpstreamError for anything but a good answer."""
        reply = await self.request(area, "GET", path, params, account=account)
        return self.checked(area, reply)

    async def read(
        self, endpoint: Endpoint, account: str, params: Params = None, **fields: str
    ) -> Any:
        """A poller's read of ``endpoint`` for ``account`` (its other path ``fields``): the
        JSON body of a good answer, else UpstreamError (``get_json``)."""
        if endpoint.method != "GET" or "poll" not in endpoint.lanes:
            raise ValueError(f"{endpoint.name} is not a read of the pollers' lane")
        path = endpoint.url_path({"account": account, **fields})
        return await self.get_json(endpoint.area, path, declared(endpoint, params), account)

    def checked(self, area: str, reply: Reply) -> Any:
        """The JSON of a good answer, else UpstreamError. The error text comes from the body's
        ``message`` or ``description``; a body-less error is described by its status alone."""
        if not reply.ok:
            msg = error_message(reply.data) or _snippet(reply.body) or status_text(reply.status)
            raise UpstreamError(area, "http", msg, reply.status, reply.data)
        if reply.data is None:
            raise UpstreamError(area, "invalid_body", "reply is not JSON", reply.status)
        if is_error_body(reply.data):
            msg = error_message(reply.data) or "error body"
            status = body_status(reply.data) or reply.status
            raise UpstreamError(area, "error_body", msg, status, reply.data)
        return reply.data

    # --- auth and inventory ------------------------------------------------------------------
    async def login(self, username: str, password: str) -> tuple[str, float]:
        """POST the token endpoint; returns (token, lifetime seconds). Never retried."""
        reply = await self._send(
            "auth",
            "POST",
            TOKEN_PATH,
            None,
            None,
            {},
            form={"username": username, "password": password},
        )
        if _rate_limited(reply):
            self.budget.signal("", "auth", reply.retry_after)
        data = self.checked("auth", reply)
        token, lifetime = models.parse_token(data)
        if self._redactor is not None:
            self._redactor.add(token)
        return token, lifetime

    async def accounts(self) -> list[models.AccountInfo]:
        return models.parse_accounts(await self.get_json("auth", ACCOUNTS_PATH))


MayRetry = Callable[[], Awaitable[bool]]  # whether one more attempt may be sent (and counted)


async def _allowed(may_retry: MayRetry | None) -> bool:
    return may_retry is None or await may_retry()


def decode_body(raw: bytes, loads: Callable[[bytes], Any] | None = None) -> Any:
    """The JSON value of a large body, decoded a piece at a time (None: not JSON), by
    ``loads`` when given (``jsonpieces.loads_each``)."""
    return _decode(raw, loads or jsonpieces.loads)


def _decode(raw: bytes, loads: Callable[[bytes], Any] = json.loads) -> Any:
    """The JSON value of a body, or None when it is not JSON."""
    try:
        return loads(raw)
    except (ValueError, RecursionError):
        return None


def _label(status: int, raw: bytes, data: Any) -> str:
    """A reply's ``upstream_requests`` label: its status, but a 2xx that is no usable answer
    counted as what it is (a body that is not JSON, an error body)."""
    if 200 <= status < 300:
        if raw and data is None:
            return "invalid_body"
        if is_error_body(data):
            return "error_body"
    return str(status)


def _rate_limited(reply: Reply) -> bool:
    """429, 420 or a 2xx error body that speaks of a rate limit."""
    if reply.status in (420, 429) or (reply.ok and is_error_body(reply.data)):
        return says_rate_limited(reply.status, error_message(reply.data))
    return False


def _snippet(raw: bytes) -> str:
    return raw[:200].decode("utf-8", "replace").strip()
