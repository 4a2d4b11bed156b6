"""A bounded log of the requests the simulated platform received, for tests to assert on."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RecordedRequest:
    """One received request. `body` is the parsed JSON (or form, password masked) or None."""

    time: float
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: Any
    area: str
    token: str | None

    @property
    def params(self) -> dict[str, list[str]]:
        """Query parameters, each with all its values (`metric` may repeat)."""
        out: dict[str, list[str]] = {}
        for k, v in self.query:
            out.setdefault(k, []).append(v)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "query": [list(p) for p in self.query],
            "body": self.body,
            "area": self.area,
            "token": self.token,
        }


class RequestLog:
    """The last `maxlen` upstream requests, oldest first (control routes are not logged)."""

    def __init__(self, maxlen: int = 1000) -> None:
        self._items: deque[RecordedRequest] = deque(maxlen=maxlen)

    def append(self, item: RecordedRequest) -> None:
        self._items.append(item)

    def clear(self) -> None:
        self._items.clear()

    def __iter__(self) -> Iterator[RecordedRequest]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def all(self) -> list[RecordedRequest]:
        return list(self._items)

    def find(
        self,
        method: str | None = None,
        path: str | None = None,
        area: str | None = None,
        path_prefix: str | None = None,
    ) -> list[RecordedRequest]:
        """Requests matching every given filter (exact `path`, or `path_prefix`)."""
        return [
            r
            for r in self._items
            if (method is None or r.method == method.upper())
            and (path is None or r.path == path)
            and (path_prefix is None or r.path.startswith(path_prefix))
            and (area is None or r.area == area)
        ]

    @property
    def last(self) -> RecordedRequest | None:
        return self._items[-1] if self._items else None
