"""What a receiver's answer means (the protocol's retry rules) and the credentials sent: files
read before every request, so a rotated token is used from the next one."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from pathlib import Path

import aiohttp
import pytest

from exporter.remotewrite.sender import Answer, Sender, auth_header, verdict
from exporter.remotewrite.settings import BasicAuth, RemoteWriteSettings

URL = "http://prometheus:9090/api/v1/write"


@pytest.mark.parametrize(
    ("status", "body", "want"),
    [
        (204, "", "written"),
        (200, "", "written"),
        (400, "invalid label", "bad"),
        (400, "out of order sample", "too_old"),
        (500, "too old sample", "too_old"),
        (400, "err-mimir-sample-timestamp-too-old", "too_old"),
        (422, "", "refused"),
        (401, "unauthorized", "refused"),
        (403, "", "refused"),
        (404, "", "refused"),
        (405, "method not allowed", "refused"),
        (401, "out of bounds", "refused"),  # only a 400 or 5xx speaks of the samples
        (301, "", "refused"),
        (429, "too many requests", "retry"),
        (429, "out of bounds", "retry"),
        (500, "internal error", "retry"),
        (503, "", "retry"),
    ],
)
def test_each_answer_is_written_bad_too_old_refused_or_retried(
    status: int, body: str, want: str
) -> None:
    assert verdict(status, body) == want


def test_token_and_password_files_are_read_before_every_request(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n", encoding="utf-8")
    s = RemoteWriteSettings(url=URL, bearer_token_file=str(token))
    assert auth_header(s) == "Bearer first"
    token.write_text("rotated", encoding="utf-8")
    assert auth_header(s) == "Bearer rotated"

    password = tmp_path / "password"
    password.write_text("pw:with:colons\n", encoding="utf-8")
    s = RemoteWriteSettings(url=URL, basic_auth=BasicAuth("writer", password_file=str(password)))
    assert auth_header(s) == "Basic " + base64.b64encode(b"writer:pw:with:colons").decode()
    assert auth_header(RemoteWriteSettings(url=URL)) is None


async def test_a_fifo_token_file_is_refused_at_once_naming_its_key(tmp_path: Path) -> None:
    """A FIFO (or a hung mount) as the token file: the request is retried later, the loop never
    waits for a writer, and the answer names the key."""
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    s = RemoteWriteSettings(url=URL, bearer_token_file=str(fifo))
    async with aiohttp.ClientSession() as session:
        started = time.monotonic()
        answer = await asyncio.wait_for(Sender(s, session).post(b""), 10)
    assert time.monotonic() - started < 1.0
    assert answer == Answer(
        "retry",
        0,
        f"remote_write.bearer_token_file: {str(fifo)!r} is not a regular file "
        "(a FIFO, a device or a directory)",
    )
