"""One operation of the platform API, declared once by the area whose replies it gives.

Each area's ``reply.py`` declares its endpoints (name, method, path template, query
parameters, the lanes that send it); the area's typed reads (``UpstreamClient.read``) and the
admin pass-through (``Operations.send``) both build their requests from that one declaration,
and the admin route table describes each route's upstream call with ``Endpoint.describe``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from string import Formatter
from typing import Literal
from urllib.parse import quote

from exporter.upstream.errors import UpstreamError

Lane = Literal["poll", "admin"]  # whose upstream slots a request takes
READ_LANES: frozenset[Lane] = frozenset({"poll", "admin"})  # read by a poller and the admin API
ADMIN_LANE: frozenset[Lane] = frozenset({"admin"})  # sent for a person only (changes, lookups)
Params = Sequence[tuple[str, str]] | Mapping[str, str] | None  # a request's query parameters


def seg(value: str, keep_slash: bool = False, area: str = "request") -> str:
    """Quote one path segment (stream names keep their slashes).

    Empty, ``.`` and ``..`` segments are refused (UpstreamError kind ``invalid_request``,
    nothing is sent): servers resolve them, so ``live/../../other`` would leave the account.
    """
    parts = value.split("/") if keep_slash else [value]
    if any(p in ("", ".", "..") for p in parts):
        raise UpstreamError(
            area,
            "invalid_request",
            f"{value!r} is not a valid path segment (empty, '.' and '..' are refused)",
        )
    return quote(value, safe="/" if keep_slash else "")


@dataclass(frozen=True)
class Endpoint:
    """``method path`` of the platform, its fields filled in per request.

    ``area`` labels its requests (budget, self-metrics, errors); ``name`` is the admin
    operation that passes it through; ``path`` a template whose ``{fields}`` are quoted path
    segments (``{account}`` always), those in ``slashed`` keeping their slashes; ``params``
    the query parameters it takes; ``lanes`` who sends it: ``poll`` for an area's typed reads,
    ``admin`` for the admin API's pass-through.
    """

    area: str
    name: str
    method: str
    path: str
    params: tuple[str, ...] = ()
    lanes: frozenset[Lane] = ADMIN_LANE
    slashed: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        fields = self.fields()
        if "account" not in fields or len(set(fields)) != len(fields):
            raise ValueError(f"{self.name}: {self.path!r} needs {{account}}, each field once")

    def fields(self) -> tuple[str, ...]:
        """The template's fields in path order."""
        return _fields(self.path)

    def describe(self) -> str:
        """``GET /app/.../{field}``: the upstream call as the admin API documents it."""
        return f"{self.method} {self.path}"

    def url_path(self, values: Mapping[str, str]) -> str:
        """The path with each field's value quoted (``seg``); a field missing or not in the
        template is a programming error (ValueError), an unsafe value UpstreamError."""
        fields = self.fields()
        if set(values) != set(fields):
            raise ValueError(f"{self.name}: fields {sorted(values)}, template {list(fields)}")
        quoted = {
            name: seg(values[name], keep_slash=name in self.slashed, area=self.area)
            for name in fields
        }
        return self.path.format_map(quoted)


@cache
def _fields(template: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in Formatter().parse(template) if name is not None)


def declared(endpoint: Endpoint, params: Params) -> Params:
    """``params`` when the endpoint takes each of them (a programming error otherwise)."""
    names = {k for k, _ in (params.items() if isinstance(params, Mapping) else params or ())}
    if not names <= set(endpoint.params):
        raise ValueError(f"{endpoint.name} takes {list(endpoint.params)}, not {sorted(names)}")
    return params
