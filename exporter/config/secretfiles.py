"""Secrets read from files: ``upstream.token_file``, ``upstream.password_file``,
``admin.read_token_file``, ``admin.write_token_file``.

A Kubernetes secret volume or a systemd credential (``LoadCredential=``) hands a secret over
as a file. The loader reads each file the enabled parts use into its key (``token_file`` into
``token``) before the rules run, at start and on every reload, so a rotated file is picked up
by the next reload. A trailing newline is dropped; the content is never shown or logged
(check-config prints the path and the masked value). Giving both a key and its file is an
error, as is a file that cannot be read or is empty.

A secret file is a small regular file: a FIFO, a device or a directory is refused without
waiting for it (opened non-blocking, then checked), one over ``MAX_SECRET_BYTES`` too, and a
read that has not answered within ``READ_DEADLINE_SECONDS`` (a hung network mount) is given up
with an error naming the key. The reload runs the whole load on a worker thread
(``exporter.runtime.reload``), so the event loop never waits for a file; the remote writer
reads its own files with ``read_secret`` the same way.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from typing import Any

FILES = (
    ("upstream", "token_file", "token"),
    ("upstream", "password_file", "password"),
    ("admin", "read_token_file", "read_token"),
    ("admin", "write_token_file", "write_token"),
)


def read_secret_files(
    raw: dict[str, Any], needed: Callable[[str], bool], errors: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """``raw`` (expanded, overrides applied) with each used ``*_file`` read into its key, and
    the keys whose file failed; each problem is added to ``errors`` (naming the key and the
    path, never the content)."""
    out = dict(raw)
    failed: list[str] = []
    for section, file_key, key in FILES:
        sec = out.get(section)
        if not isinstance(sec, dict):
            continue
        path = sec.get(file_key)
        where = f"{section}.{file_key}"
        if not path or not isinstance(path, str) or not needed(where):
            continue
        if sec.get(key):
            errors.append(f"{where}: give either {section}.{key} or {where}, not both")
            continue
        try:
            value = read_secret(path)
        except SecretFileError as exc:
            errors.append(f"{where}: {exc}")
            failed.append(f"{section}.{key}")
            continue
        out[section] = {**sec, key: value}
    return out, failed


READ_DEADLINE_SECONDS = 5.0
MAX_SECRET_BYTES = 64 * 1024  # a token or a password; a longer file is not a secret file


class SecretFileError(Exception):
    """A secret file that cannot be used; the message names the path, never the content."""


def read_secret(path: str, deadline: float = READ_DEADLINE_SECONDS) -> str:
    """The secret ``path`` holds, without its trailing newline (SecretFileError otherwise).

    Blocks the calling thread for at most ``deadline`` seconds: the file is read on a
    daemon thread of its own, which a hung mount may keep until it answers (one per read
    that timed out)."""
    result: list[tuple[str, str]] = []
    reader = threading.Thread(
        target=lambda: result.append(_read(path)), name="secret-file", daemon=True
    )
    reader.start()
    reader.join(deadline)
    if not result:
        raise SecretFileError(f"no answer from {path!r} within {deadline:g} s")
    problem, value = result[0]
    if problem:
        raise SecretFileError(problem)
    return value


def _read(path: str) -> tuple[str, str]:
    """(problem, "") or ("", the secret without its trailing newline)."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}", ""
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"{path!r} is not a regular file (a FIFO, a device or a directory)", ""
        data = os.read(fd, MAX_SECRET_BYTES + 1)
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}", ""
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET_BYTES:
        return f"{path!r} is longer than {MAX_SECRET_BYTES} bytes: not a secret", ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"{path!r} is not UTF-8 text", ""
    value = text.removesuffix("\n").removesuffix("\r")
    return ("", value) if value else (f"{path!r} is empty", "")
