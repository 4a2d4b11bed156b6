"""Bearer tokens: the admin role a caller's token gives.

The admin API, its OpenAPI document and ``POST /-/reload`` all read it, so none of them
imports another's module for it.
"""

from __future__ import annotations

import hmac
from typing import Literal

Role = Literal["read", "write"]


def authenticate(header: str | None, read_token: str, write_token: str) -> Role | None:
    """The caller's role from ``Authorization: Bearer <token>``; None when missing or unknown.

    Both tokens are always compared (constant time), so timing says nothing about which matched.
    """
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token_role(token, read_token, write_token)


def token_role(token: str, read_token: str, write_token: str) -> Role | None:
    """The role a bare token gives (``authenticate`` without the ``Bearer`` scheme); None when
    empty or unknown. Both tokens are always compared, in constant time."""
    token = token.strip()
    if not token:
        return None
    given = token.encode()
    is_write = bool(write_token) and hmac.compare_digest(given, write_token.encode())
    is_read = bool(read_token) and hmac.compare_digest(given, read_token.encode())
    if is_write:
        return "write"
    if is_read:
        return "read"
    return None
