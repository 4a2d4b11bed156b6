"""The admin API's pass-through: an endpoint an area declares for the admin lane, sent as one
request and its reply returned as received."""

from __future__ import annotations

from typing import Any

from exporter.upstream.client import MayRetry, UpstreamClient
from exporter.upstream.endpoint import Endpoint, Params, declared
from exporter.upstream.reply import Reply


class Operations:
    """The admin API's pass-through: any endpoint an area declares for the admin lane, sent as
    one request (never retried unless a GET) and its ``Reply`` returned unchanged, so the admin
    surface can pass status and body on."""

    def __init__(self, client: UpstreamClient) -> None:
        self._c = client

    async def send(
        self,
        endpoint: Endpoint,
        account: str,
        *,
        params: Params = None,
        body: Any = None,
        may_retry: MayRetry | None = None,
        **fields: str,
    ) -> Reply:
        """``endpoint`` for ``account`` with its other path ``fields``. Counted in the account's
        request budget but never postponed, and sent in the admin lane's own slots: a person
        is waiting."""
        if "admin" not in endpoint.lanes:
            raise ValueError(f"{endpoint.name} is not sent through the admin lane")
        return await self._c.request(
            endpoint.area,
            endpoint.method,
            endpoint.url_path({"account": account, **fields}),
            declared(endpoint, params),
            body=body,
            account=account,
            budgeted=False,
            lane="admin",
            may_retry=may_retry,
        )
