"""Drive a headless Chromium over the DevTools protocol: set a viewport, load a page, read the
DOM back with JavaScript run by the browser (not by the page, so its CSP stays in force), take
a screenshot, collect console and CSP errors."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import socket
from pathlib import Path
from typing import Any

import aiohttp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Chromium:
    """One headless browser with one page; ``async with Chromium(path, profile) as page``."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.binary, self.profile = binary, profile
        self.errors: list[str] = []
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []

    async def __aenter__(self) -> Chromium:
        port = _free_port()
        self._proc = await asyncio.create_subprocess_exec(
            *[
                self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
                f"--remote-debugging-port={port}", f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        self._http = aiohttp.ClientSession()
        targets: list[dict[str, Any]] = []
        for _ in range(300):
            try:
                async with self._http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                    targets = [t for t in await resp.json() if t.get("type") == "page"]
                if targets:
                    break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        assert targets, "Chromium did not open its DevTools port"
        self._ws = await self._http.ws_connect(targets[0]["webSocketDebuggerUrl"], max_msg_size=0)
        await self.call("Page.enable")
        await self.call("Runtime.enable")
        await self.call("Log.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()
        await self._http.close()
        self._proc.terminate()
        try:
            await asyncio.wait_for(self._proc.wait(), timeout=10)
        except TimeoutError:
            self._proc.kill()
            await self._proc.wait()

    def _note(self, event: dict[str, Any]) -> None:
        self._events.append(event)
        params = event.get("params", {})
        if event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(params["entry"]["text"])
        if event.get("method") == "Runtime.exceptionThrown":
            self.errors.append(json.dumps(params)[:500])

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        await self._ws.send_json({"id": ident, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self._ws.receive_json(), timeout=60)
            if message.get("id") == ident:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result
            self._note(message)

    async def open(self, url: str, width: int, height: int, mobile: bool = False) -> None:
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width, height=height, deviceScaleFactor=1, mobile=mobile,
        )  # fmt: skip
        self._events.clear()
        await self.call("Page.navigate", url=url)
        for _ in range(600):
            if any(e.get("method") == "Page.loadEventFired" for e in self._events):
                return
            self._note(await asyncio.wait_for(self._ws.receive_json(), timeout=60))
        raise AssertionError(f"{url} did not load")

    async def evaluate(self, expression: str) -> Any:
        reply = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        await asyncio.to_thread(path.write_bytes, base64.b64decode(shot["data"]))
