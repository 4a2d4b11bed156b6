"""Typed replies the upstream client reads itself (the login token, the account list) and the
traffic metrics reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exporter.upstream.fields import fail, lst, number, obj, text


# --- accounts and token -------------------------------------------------------------------
@dataclass(frozen=True)
class AccountInfo:
    name: str
    status: str


def parse_accounts(body: Any) -> list[AccountInfo]:
    out = []
    for i, item in enumerate(lst(body, "auth", "accounts")):
        d = obj(item, "auth", f"accounts[{i}]")
        out.append(AccountInfo(text(d, "name", "auth", f"accounts[{i}]"), str(d.get("status", ""))))
    return out


def parse_token(body: Any) -> tuple[str, float]:
    """(token, lifetime in seconds) from the token endpoint's reply.

    The token is ``token`` (as sent) or ``auth_token`` (as one docs table names it); any
    prefix (``cdn1_``, ``cdn2_``) is kept. ``lifetime`` is in milliseconds.
    """
    d = obj(body, "auth", "token reply")
    key = "token" if "token" in d or "auth_token" not in d else "auth_token"
    token = text(d, key, "auth", "token reply")
    if not token:
        raise fail("auth", f"token reply.{key}", "empty token")
    lifetime_ms = number(d, "lifetime", "auth", "token reply", default=21_599_000)
    return token, lifetime_ms / 1000.0
