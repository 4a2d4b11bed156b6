"""The token endpoint `/app/oauth/v1/token/` and the account list `/app/inventory/v1/accounts/`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from exporter.simulator.auth import LoginRefused
from exporter.simulator.http_common import error, error_body

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

TOKEN_PATH = "/app/oauth/v1/token/"
ACCOUNTS_PATH = "/app/inventory/v1/accounts/"


async def login_fields(request: web.Request) -> dict[str, Any]:
    """Form fields (the documented way) or a JSON object."""
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
    form = await request.post()
    return {k: v for k, v in form.items() if isinstance(v, str)}


class AuthRoutes:
    """Handlers of the auth (token) and inventory (account list) endpoints."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post(TOKEN_PATH, self.token),
            web.post(TOKEN_PATH.rstrip("/"), self.token),
            web.get(ACCOUNTS_PATH, self.accounts),
            web.get(ACCOUNTS_PATH.rstrip("/"), self.accounts),
        ]

    async def token(self, request: web.Request) -> web.Response:
        fields = await login_fields(request)
        username, password = fields.get("username"), fields.get("password")
        if not isinstance(username, str) or not isinstance(password, str):
            return error("auth", 400, "username and password are required")
        refuse = self.sim.faults.take("auth", request.path, kind="refuse_password") is not None
        prefix = "cdn2_" if self.sim.has_quirk("cdn2-prefix") else "cdn1_"
        try:
            reply = self.sim.auth.login(username, password, refuse=refuse, prefix=prefix)
        except LoginRefused as exc:
            if exc.status == 403 and self.sim.has_quirk("token-status-body"):
                return web.json_response(error_body("auth", exc.status, exc.message))
            if exc.status == 403 and self.sim.has_quirk("empty-401"):
                return web.Response(status=401)
            return error("auth", exc.status, exc.message)
        if self.sim.has_quirk("auth-token-field"):
            reply["auth_token"] = reply.pop("token")
        return web.json_response(reply)

    async def accounts(self, request: web.Request) -> web.Response:
        return web.json_response(
            [
                {
                    "status": "active",
                    "utoken": self.sim.utoken(name),
                    "uid": f"1-1-{name}",
                    "name": name,
                }
                for name in self.sim.accounts
                if name not in self.sim.unlisted
            ]
        )
