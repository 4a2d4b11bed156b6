"""A web-config reload reads its files and loads its certificates off the event loop: inline
TLS passes through temporary files, and no file is opened on the loop's thread."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.web.webconfig import load_web_config
from exporter.web.webreload import LiveWebConfig

from .tls_certs import make_certs


def _write(path: Path, cert: Path, key: Path, version: str) -> None:
    tls = {"cert": cert.read_text(), "key": key.read_text(), "min_version": version}
    path.write_text(yaml.safe_dump({"tls_server_config": tls}), encoding="utf-8")


async def test_a_reload_with_inline_tls_opens_no_file_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certs = make_certs(tmp_path)
    path = tmp_path / "web.yml"
    _write(path, certs.server_cert, certs.server_key, "TLS12")
    live = LiveWebConfig(load_web_config(str(path)))
    loop_thread = threading.get_ident()
    opened: list[tuple[str, bool]] = []
    real_open = os.open

    def spy(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append((str(file), threading.get_ident() == loop_thread))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    task = asyncio.create_task(live.run(seconds=0.01))
    try:
        _write(path, certs.server_cert, certs.server_key, "TLS13")
        os.utime(path, (1, 1))  # a stamp of its own, however fast the write
        for _ in range(500):
            if live.generation:
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert live.generation == 1
    inline = [n for n, _ in opened if "cdnvideo-tls-" in n and n.endswith(("/cert", "/key"))]
    assert len(inline) == 2  # the reload's cert and key passed through their temp files
    assert [name for name, on_loop in opened if on_loop] == []
