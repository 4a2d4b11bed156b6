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


# --- metrics --------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricsRow:
    """One element of ``data``: the metric values, plus the resource identity when per resource."""

    values: dict[str, Any]
    resource: str = ""
    resource_name: str = ""
    cname: str = ""


@dataclass(frozen=True)
class MetricsReply:
    start: str
    end: str
    account: str
    rows: tuple[MetricsRow, ...]
    skew_seconds: float | None = None  # the platform's clock minus ours (its Date header)


_RESOURCE_KEYS = ("resource", "resource_name", "cname")


# Keys of an error body; a metrics reply carrying one is an error whatever else it holds
# (`{"error": ..., "data": []}` is no answer, not "no resources").
METRICS_ERROR_KEYS = ("error", "message", "description")


def parse_metrics(body: Any, per_resource: bool, consume: bool = False) -> MetricsReply:
    """The checked metrics reply. ``consume``: the body's row objects become the rows' values
    (the resource keys taken out of them) instead of being copied, so the body is not to be
    used afterwards (the client's decoded reply: at 5,000 resources one copy of ~30 MB less
    at the peak of a traffic poll)."""
    d = obj(body, "traffic", "metrics reply")
    for key in METRICS_ERROR_KEYS:
        text = d.get(key)
        if text not in (None, "", [], {}):
            raise fail("traffic", f"metrics reply.{key}", f"an error body: {str(text)[:200]}")
    rows = []
    for i, item in enumerate(lst(d.get("data"), "traffic", "metrics reply.data")):
        r = obj(item, "traffic", f"data[{i}]")
        if per_resource:
            ident = {k: r.get(k) for k in _RESOURCE_KEYS}
            if not isinstance(ident["resource"], str | int) or ident["resource"] == "":
                raise fail("traffic", f"data[{i}].resource", "missing resource identifier")
            if consume:
                for k in _RESOURCE_KEYS:
                    r.pop(k, None)
            rows.append(
                MetricsRow(
                    r if consume else {k: v for k, v in r.items() if k not in _RESOURCE_KEYS},
                    str(ident["resource"]),
                    str(ident["resource_name"] or ""),
                    str(ident["cname"] or ""),
                )
            )
        else:
            rows.append(MetricsRow(r if consume else dict(r)))
    return MetricsReply(
        str(d.get("start", "")), str(d.get("end", "")), str(d.get("account", "")), tuple(rows)
    )
