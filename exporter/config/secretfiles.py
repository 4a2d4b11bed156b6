"""Secrets read from files: ``upstream.token_file``, ``upstream.password_file``,
``admin.read_token_file``, ``admin.write_token_file``.

A Kubernetes secret volume or a systemd credential (``LoadCredential=``) hands a secret over
as a file. The loader reads each file the enabled parts use into its key (``token_file`` into
``token``) before the rules run, at start and on every reload, so a rotated file is picked up
by the next reload. A trailing newline is dropped; the content is never shown or logged
(check-config prints the path and the masked value). Giving both a key and its file is an
error, as is a file that cannot be read or is empty.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
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
        problem, value = _read(path)
        if problem:
            errors.append(f"{where}: {problem}")
            failed.append(f"{section}.{key}")
            continue
        out[section] = {**sec, key: value}
    return out, failed


def _read(path: str) -> tuple[str, str]:
    """(problem, "") or ("", the secret without its trailing newline)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}", ""
    except UnicodeDecodeError:
        return f"{path!r} is not UTF-8 text", ""
    value = text.removesuffix("\n").removesuffix("\r")
    return ("", value) if value else (f"{path!r} is empty", "")
