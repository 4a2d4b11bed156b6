"""Faults on demand per area: error statuses, slow or broken replies, 200 with an error body."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

AREAS = ("traffic", "restream", "dvr", "talking_head", "auth", "inventory")
KINDS = (
    "500",  # HTTP 500 with the area's error body
    "503",  # HTTP 503 with the area's error body
    "504",  # HTTP 504 with the area's error body
    "slow",  # wait `delay` seconds, then answer normally
    "malformed",  # HTTP 200, Content-Type JSON, a truncated JSON body
    "reset",  # the connection is reset without any reply
    "error_200",  # HTTP 200 with {"status": "error", "message": "Rate limit exceeded"}
    "refuse_password",  # auth only: the token endpoint rejects even the right password
)
RATE_LIMIT_BODY: dict[str, Any] = {"status": "error", "message": "Rate limit exceeded"}


@dataclass
class Fault:
    """One switched-on fault; `remaining` None means until cleared."""

    area: str
    kind: str
    remaining: int | None = None
    delay: float = 0.0
    match: str | None = None
    body: dict[str, Any] = field(default_factory=lambda: dict(RATE_LIMIT_BODY))
    hits: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "area": self.area,
            "kind": self.kind,
            "remaining": self.remaining,
            "delay": self.delay,
            "match": self.match,
            "body": self.body,
            "hits": self.hits,
        }


class Faults:
    """At most one fault per area; `take` applies it to a request and counts it down."""

    def __init__(self, default_delay: float = 5.0) -> None:
        self.default_delay = default_delay
        self._faults: dict[str, Fault] = {}

    def set(
        self,
        area: str,
        kind: str,
        count: int | None = None,
        *,
        delay: float | None = None,
        match: str | None = None,
        body: dict[str, Any] | None = None,
    ) -> list[Fault]:
        """Switch a fault on for `area` (or every area with "*"), replacing what was there.

        `count` limits it to the next N matching requests; `match` to paths containing it;
        `delay` is the wait of "slow"; `body` replaces the "error_200" body.
        """
        kind = str(kind)
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}")
        areas = AREAS if area in ("*", "all") else (area,)
        for a in areas:
            if a not in AREAS:
                raise ValueError(f"unknown area {a!r}; known: {', '.join(AREAS)}")
        if kind == "refuse_password" and areas != ("auth",):
            raise ValueError("refuse_password applies to the auth area only")
        if count is not None and count < 1:
            raise ValueError("count must be at least 1 (or None for until cleared)")
        made = []
        for a in areas:
            fault = Fault(
                area=a,
                kind=kind,
                remaining=count,
                delay=self.default_delay if delay is None else float(delay),
                match=match,
                body=dict(body) if body is not None else dict(RATE_LIMIT_BODY),
            )
            self._faults[a] = fault
            made.append(fault)
        return made

    def clear(self, area: str | None = None) -> None:
        """Switch off the fault of one area, or all of them."""
        if area is None or area in ("*", "all"):
            self._faults.clear()
        else:
            self._faults.pop(area, None)

    def active(self) -> list[Fault]:
        return list(self._faults.values())

    def get(self, area: str) -> Fault | None:
        return self._faults.get(area)

    def take(self, area: str, path: str, kind: str | None = None) -> Fault | None:
        """The fault that applies to this request (counted down), if any.

        With `kind`, only a fault of that kind is taken (the token endpoint asks for
        "refuse_password" separately, after the generic faults).
        """
        fault = self._faults.get(area)
        if fault is None or (fault.match is not None and fault.match not in path):
            return None
        if kind is None and fault.kind == "refuse_password":
            return None
        if kind is not None and fault.kind != kind:
            return None
        fault.hits += 1
        if fault.remaining is not None:
            fault.remaining -= 1
            if fault.remaining <= 0:
                del self._faults[area]
        return fault
