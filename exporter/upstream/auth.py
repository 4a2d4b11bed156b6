"""Where the CDN-AUTH-TOKEN comes from: a static token, or a login renewed before it expires."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import NoReturn, Protocol

import structlog

from exporter.support.clock import Clock
from exporter.upstream.errors import UpstreamError

log = structlog.get_logger("exporter.upstream.auth")

# Renew when this share of the lifetime has passed (a 6-hour token renews after ~5 hours).
RENEW_AT_FRACTION = 0.8
# The token endpoint allows about 20 requests a minute; never ask more often than this.
MIN_SECONDS_BETWEEN_LOGINS = 5.0
# A token refused sooner than this after it was issued is not renewed again: the refusal is
# about something else (an account without access), and a renewal per request would hammer
# the token endpoint.
MIN_TOKEN_AGE_FOR_RENEWAL = 30.0

LoginFn = Callable[[str, str], Awaitable[tuple[str, float]]]


class TokenSource(Protocol):
    """Hands out the token for the next request."""

    async def token(self) -> str: ...

    async def expired(self, token: str) -> bool:
        """The platform refused ``token`` (invalid or expired); True when a fresh one is worth
        a retry."""
        ...

    def accepted(self, token: str) -> None:
        """The platform accepted ``token`` (a 2xx reply)."""
        ...

    async def check(self) -> None:
        """Raise UpstreamError unless the last attempt to get a token succeeded (the health
        behind ``cdnvideo_up{area="auth"}``)."""
        ...


class StaticToken:
    """A token from the config; it cannot be renewed.

    When the platform refuses it, one error line ``upstream_token_rejected`` says so (not one
    per request); the next accepted request logs ``upstream_token_accepted``.
    """

    def __init__(self, token: str) -> None:
        self._token = token
        self.rejected = False

    def replace(self, token: str) -> None:
        """Send ``token`` from now on (a reload read a rotated ``upstream.token_file``)."""
        if token != self._token:
            self._token = token
            self.rejected = False

    async def token(self) -> str:
        return self._token

    async def expired(self, token: str) -> bool:
        if not self.rejected:
            self.rejected = True
            log.error(
                "upstream_token_rejected",
                hint="the platform refused upstream.token (invalid or expired); it cannot be "
                "renewed: set a valid token, or username + password for automatic renewal",
            )
        return False

    def accepted(self, token: str) -> None:
        if self.rejected:
            self.rejected = False
            log.info("upstream_token_accepted")

    async def check(self) -> None:
        return None


class LoginRejected(UpstreamError):
    """The token endpoint refused the username/password; we never try it again."""


def _transient(exc: UpstreamError) -> bool:
    """A token-endpoint failure that says nothing about the password (rate limit, 5xx)."""
    if exc.status in (420, 429) or exc.status >= 500 or exc.retryable:
        return True
    text = exc.message.lower()
    return "rate limit" in text or "too many" in text


class PasswordLogin:
    """Gets a token from ``/app/oauth/v1/token/`` and renews it ahead of its lifetime.

    A rejected password is remembered: no further login is attempted until a reload or a
    restart brings a different password (seven wrong passwords lock the portal login for
    hours).
    When a renewal fails while the current token is still inside its lifetime, that token
    stays in use (a warning is logged, ``check`` reports the failure) and renewal is tried
    again, at most every MIN_SECONDS_BETWEEN_LOGINS, until it expires.
    """

    def __init__(self, username: str, password: str, login: LoginFn, clock: Clock) -> None:
        self._username = username
        self._password = password
        self._login = login
        self._clock = clock
        self._token = ""
        self._renew_at = 0.0
        self._expires_at = 0.0
        self._issued_at = float("-inf")
        self._last_attempt = float("-inf")
        self._rejected: LoginRejected | None = None
        self._failure: UpstreamError | None = None  # of the last login attempt
        self._lock = asyncio.Lock()

    def replace_password(self, password: str) -> None:
        """Log in with ``password`` from the next login on (a reload read a rotated
        ``upstream.password_file``); a login the old one got refused may be tried again."""
        if password != self._password:
            self._password = password
            self._rejected = None

    async def token(self) -> str:
        if self._token and self._clock.time() < self._renew_at:
            return self._token
        async with self._lock:
            if self._token and self._clock.time() < self._renew_at:
                return self._token
            return await self._refresh(reason="renewal" if self._token else "first")

    async def expired(self, token: str) -> bool:
        async with self._lock:
            if token != self._token:  # somebody renewed it meanwhile
                return True
            if self._clock.time() - self._issued_at < MIN_TOKEN_AGE_FOR_RENEWAL:
                return False  # a token this fresh is not what was refused
            self._renew_at = 0.0
            self._expires_at = min(self._expires_at, self._clock.time())  # the platform says so
            # False when the last login was too recent to ask again: retrying is pointless.
            return await self._refresh(reason="expired") != token

    def accepted(self, token: str) -> None:
        return None

    @staticmethod
    def _raise_rejected(rejected: LoginRejected) -> NoReturn:
        # A fresh exception each time: re-raising one instance grows its traceback forever.
        raise LoginRejected(
            rejected.area, rejected.kind, rejected.message, rejected.status, rejected.body
        ) from None

    async def check(self) -> None:
        await self.token()
        failure = self._failure
        if failure is not None:
            raise UpstreamError(failure.area, failure.kind, failure.message, failure.status)

    def _still_valid(self, now: float) -> bool:
        return bool(self._token) and now < self._expires_at

    def _keep(self, now: float, exc: UpstreamError) -> str:
        """Go on with the current, still valid token after a failed renewal."""
        log.warning(
            "token_renewal_failed",
            error=exc.message,
            status=exc.status,
            token_expires_in_seconds=round(self._expires_at - now),
        )
        return self._token

    async def _refresh(self, reason: str) -> str:
        now = self._clock.time()
        if self._rejected is not None:
            if self._still_valid(now):
                return self._token
            self._raise_rejected(self._rejected)
        if now - self._last_attempt < MIN_SECONDS_BETWEEN_LOGINS:
            if self._token:
                return self._token
            raise UpstreamError(
                "auth", "auth", "token endpoint asked too recently; waiting before the next login"
            )
        self._last_attempt = now
        try:
            token, lifetime = await self._login(self._username, self._password)
        except UpstreamError as exc:
            self._failure = exc
            if not _transient(exc) and (exc.status in (400, 401, 403) or exc.kind == "error_body"):
                self._rejected = self._failure = LoginRejected(
                    "auth",
                    "auth",
                    f"login rejected for {self._username!r}; not retrying until restart "
                    f"({exc.message})",
                    exc.status,
                )
                log.error("login_rejected", username=self._username, status=exc.status)
                if self._still_valid(now):
                    return self._keep(now, self._rejected)
                self._raise_rejected(self._rejected)
            if self._still_valid(now):
                return self._keep(now, exc)
            raise
        self._failure = None
        self._token = token
        self._issued_at = now
        self._renew_at = now + max(lifetime * RENEW_AT_FRACTION, 1.0)
        self._expires_at = now + lifetime
        log.info("token_renewed", reason=reason, lifetime_seconds=round(lifetime))
        return token
