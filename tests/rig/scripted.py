"""A scripted stand-in for the platform API, served by a real aiohttp test server.

Each route answers from a queue of ``Answer``s (the last one repeats); every request is
recorded with its raw path, query, headers and body; the token endpoint hands out numbered
tokens and knows which ones it has expired.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from tests.rig.http import FakeServer

TOKEN_PATH = "/app/oauth/v1/token/"
EXPIRED = {"status": "Forbidden", "description": "Token is expired"}


@dataclass(frozen=True)
class Answer:
    status: int = 200
    json: Any = None
    text: str | None = None
    delay: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()

    def response(self) -> web.Response:
        if self.text is not None:
            return web.Response(
                status=self.status, text=self.text, content_type="text/html", headers=self.headers
            )
        body = json.dumps({} if self.json is None else self.json)
        return web.Response(
            status=self.status, text=body, content_type="application/json", headers=self.headers
        )


@dataclass(frozen=True)
class Seen:
    method: str
    path: str  # raw (still percent-encoded), without the query
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def form(self) -> dict[str, list[str]]:
        return parse_qs(self.body.decode())


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class FakePlatform(FakeServer):
    password: str = "right-password"
    lifetime_ms: int = 21_599_000
    login_answer: Answer | None = None  # overrides the token endpoint when set
    seen: list[Seen] = field(default_factory=list)
    routes: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    expired: set[str] = field(default_factory=set)
    issued: list[str] = field(default_factory=list)

    def on(self, method: str, path: str, *answers: Answer) -> None:
        self.routes[(method, path)] = list(answers)

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        return [
            s
            for s in self.seen
            if (method is None or s.method == method) and (path is None or s.path == path)
        ]

    @property
    def logins(self) -> int:
        return len(self.requests("POST", TOKEN_PATH))

    def record(self, request: web.Request, body: bytes) -> None:
        path = request.rel_url.raw_path
        self.seen.append(
            Seen(request.method, path, list(request.query.items()), dict(request.headers), body)
        )

    async def answer(self, request: web.Request, body: bytes) -> web.StreamResponse:
        path = request.rel_url.raw_path
        if request.method == "POST" and path == TOKEN_PATH:
            return await self._login(body)
        token = request.headers.get("CDN-AUTH-TOKEN", "")
        if token in self.expired:
            return Answer(403, EXPIRED).response()
        queue = self.routes.get((request.method, path))
        if not queue:
            return Answer(
                404, {"status": "Not Found", "description": f"no route {path}"}
            ).response()
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer.delay:
            await asyncio.sleep(answer.delay)
        return answer.response()

    async def _login(self, body: bytes) -> web.Response:
        if self.login_answer is not None:
            return self.login_answer.response()
        form = parse_qs(body.decode())
        if form.get("password") != [self.password]:
            return Answer(403, {"status": 403, "message": "Invalid credentials"}).response()
        token = f"cdn1_token_{len(self.issued) + 1}"
        self.issued.append(token)
        return Answer(
            200, {"person_id": 17, "status": 200, "token": token, "lifetime": self.lifetime_ms}
        ).response()
