"""Bad upstream replies: a proxy in front of the simulator, and mutations of real replies."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from hypothesis import strategies as st

Path_ = tuple[str | int, ...]


@dataclass
class Tamper:
    """Forwards every request to the simulator, except those whose ``path?account=`` key has
    an override: those get the override's bytes as an HTTP 200 JSON reply."""

    upstream: str
    session: aiohttp.ClientSession
    overrides: dict[str, bytes] = field(default_factory=dict)

    @staticmethod
    def key(path: str, account: str = "") -> str:
        return f"{path}?account={account}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = self.overrides.get(self.key(request.path, request.query.get("account", "")))
        if body is not None:
            body = echo_window(body, request)
            return web.Response(body=body, content_type="application/json")
        async with self.session.request(
            request.method,
            self.upstream + request.path_qs,
            headers={k: v for k, v in request.headers.items() if k.upper() == "CDN-AUTH-TOKEN"},
            data=await request.read() or None,
        ) as resp:
            return web.Response(
                status=resp.status, body=await resp.read(), content_type=resp.content_type
            )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app


TEMPLATE_START = "2026-01-01T17:00:00"  # the window the metrics templates were read for
TEMPLATE_END = "2026-01-01T17:01:00"


def echo_window(body: bytes, request: web.Request) -> bytes:
    """A metrics template answers for the window asked (the exporter checks the echo), unless
    a mutation changed its ``start``/``end``."""
    if not request.path.startswith("/app/metrics/") or "start" not in request.query:
        return body
    try:
        doc = json.loads(body)
    except ValueError:
        return body
    if not isinstance(doc, dict):
        return body
    for key, template in (("start", TEMPLATE_START), ("end", TEMPLATE_END)):
        if doc.get(key) == template:
            doc[key] = request.query.get(key, template)
    return json.dumps(doc).encode()


# --- mutations ------------------------------------------------------------------------------
HUGE = (10**30, 10**400, 1.7e308, -1.7e308, -1, 2**63, 2**53 + 1)
ODD_FLOATS = (math.nan, math.inf, -math.inf)
EMPTY: tuple[Any, ...] = ([], {}, "")
KINDS = ("drop", "null", "type", "huge", "nan", "empty", "extra", "wrap")

junk = st.one_of(
    st.text(max_size=8),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@dataclass(frozen=True)
class Op:
    """One mutation: ``kind`` at the node numbered ``at`` (modulo the nodes there are)."""

    at: int
    kind: str
    value: Any = None
    key: str = "x_unknown"


ops = st.builds(
    Op,
    at=st.integers(min_value=0, max_value=10_000),
    kind=st.sampled_from(KINDS),
    value=junk,
    key=st.text(min_size=1, max_size=8),
)
extra_ops = st.builds(
    Op,
    at=st.integers(min_value=0, max_value=10_000),
    kind=st.just("extra"),
    value=junk,
    key=st.text(min_size=1, max_size=8).map(lambda k: "x_" + k),
)


def nodes(doc: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every node of a JSON document, root first."""
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from nodes(v, (*path, i))


def _get(doc: Any, path: Path_) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def apply(doc: Any, op: Op, skip: tuple[str, ...] = ()) -> Any:
    """``doc`` with ``op`` applied (a copy); ``skip``: keys whose subtrees are left alone."""
    doc = copy.deepcopy(doc)
    paths = [p for p in nodes(doc) if not any(k in skip for k in p if isinstance(k, str))]
    path = paths[op.at % len(paths)]
    node = _get(doc, path)
    if op.kind == "extra":
        if not isinstance(node, dict):  # the nearest object above
            while path and not isinstance(_get(doc, path), dict):
                path = path[:-1]
            node = _get(doc, path)
        if isinstance(node, dict):
            node[op.key] = op.value
        return doc
    new: Any
    if op.kind == "drop":
        if not path:
            return {}
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
        return doc
    if op.kind == "null":
        new = None
    elif op.kind == "type":
        new = op.value
    elif op.kind == "huge":
        new = HUGE[op.at % len(HUGE)]
    elif op.kind == "nan":
        new = ODD_FLOATS[op.at % len(ODD_FLOATS)]
    elif op.kind == "empty":
        new = EMPTY[op.at % len(EMPTY)]
    else:  # wrap
        new = [node]
    if not path:
        return new
    _get(doc, path[:-1])[path[-1]] = new
    return doc


def encode(doc: Any) -> bytes:
    """JSON as a sloppy server writes it: NaN and Infinity literals, ints of any size."""
    return json.dumps(doc, allow_nan=True).encode()
