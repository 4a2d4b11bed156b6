"""Tokens: the static token, tokens issued for username/password, lock-out after bad passwords."""

from __future__ import annotations

from collections import deque
from enum import Enum

from exporter.simulator.config import SimConfig
from exporter.simulator.hashing import hex_id
from exporter.support.clock import Clock

PERSON_ID = 17


class TokenProblem(Enum):
    MISSING = "missing"
    INVALID = "invalid"
    EXPIRED = "expired"


class LoginRefused(Exception):
    """The token endpoint says no: HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class AuthState:
    """Which tokens are good now, and the token endpoint's bookkeeping."""

    def __init__(self, config: SimConfig, clock: Clock) -> None:
        self._config = config
        self._clock = clock
        self._issued: dict[str, float] = {}  # token -> expiry (Unix seconds)
        self._attempts: deque[float] = deque()
        self.static_expired = False
        self.failed_logins = 0  # wrong passwords since the last reset (never cleared by success)
        self.consecutive_failures = 0
        self.locked_until = 0.0
        self.issued_count = 0

    def check(self, token: str | None) -> TokenProblem | None:
        """None when `token` may be used now."""
        if not token:
            return TokenProblem.MISSING
        if token == self._config.token:
            return TokenProblem.EXPIRED if self.static_expired else None
        expiry = self._issued.get(token)
        if expiry is None:
            return TokenProblem.INVALID
        return TokenProblem.EXPIRED if expiry <= self._clock.time() else None

    def login(
        self, username: str, password: str, refuse: bool = False, prefix: str = "cdn1_"
    ) -> dict[str, object]:
        """The token endpoint: a new token, or LoginRefused (403 wrong/locked, 429 too often)."""
        now = self._clock.time()
        while self._attempts and self._attempts[0] <= now - 60:
            self._attempts.popleft()
        if len(self._attempts) >= self._config.token_requests_per_minute:
            raise LoginRefused(429, "Too many requests")
        self._attempts.append(now)
        if now < self.locked_until:
            raise LoginRefused(403, "Login is locked after too many failed attempts")
        if refuse or username != self._config.username or password != self._config.password:
            self.failed_logins += 1
            self.consecutive_failures += 1
            if self.consecutive_failures >= self._config.login_max_failures:
                self.locked_until = now + self._config.login_lock_seconds
                self.consecutive_failures = 0
            raise LoginRefused(403, "Invalid username or password")
        self.consecutive_failures = 0
        self.issued_count += 1
        token = prefix + hex_id(self._config.seed, "token", self.issued_count, now, length=40)
        lifetime = self._config.token_lifetime_seconds
        self._issued[token] = now + lifetime
        return {
            "person_id": PERSON_ID,
            "status": 200,
            "token": token,
            "lifetime": int(lifetime * 1000),
        }

    def expire_all(self, include_static: bool = False) -> None:
        """Every issued token is expired from now on (and the static one too if asked)."""
        now = self._clock.time()
        self._issued = {t: min(e, now) for t, e in self._issued.items()}
        if include_static:
            self.static_expired = True

    def reset(self) -> None:
        """Forget lock-out, failures and the static token's expiry (issued tokens stay)."""
        self.static_expired = False
        self.failed_logins = 0
        self.consecutive_failures = 0
        self.locked_until = 0.0
        self._attempts.clear()
