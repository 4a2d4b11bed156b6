"""Secrets from files (``upstream.token_file``, ``password_file``, ``admin.read_token_file``,
``admin.write_token_file``): read into their keys, masked, refused with the key and the path."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from exporter.config import ConfigError, parse_config, secretfiles
from exporter.config.report import masked_dict

READ = "read-token-from-a-file-0123"
WRITE = "write-token-from-a-file-0123"


def secret(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def problems(raw: dict[str, object]) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    return caught.value.problems


def test_each_file_is_read_into_its_key_without_the_trailing_newline(tmp_path: Path) -> None:
    s = parse_config(
        {
            "upstream": {
                "username": "ops@example.com",
                "password_file": secret(tmp_path, "password", "p@ss word\n"),
            },
            "admin": {
                "enabled": True,
                "read_token_file": secret(tmp_path, "read", READ + "\n"),
                "write_token_file": secret(tmp_path, "write", WRITE),
            },
        },
        env={},
    )
    assert s.upstream.password == "p@ss word"
    assert (s.admin.read_token, s.admin.write_token) == (READ, WRITE)
    assert {"p@ss word", READ, WRITE} <= set(s.secrets())
    shown = masked_dict(s)
    assert shown["upstream"]["password_file"] == str(tmp_path / "password")
    assert "p@ss word" not in repr(shown)
    assert READ not in repr(shown)

    token = parse_config({"upstream": {"token_file": secret(tmp_path, "t", "t0ken\r\n")}}, env={})
    assert token.upstream.token == "t0ken"


def test_a_key_and_its_file_together_are_refused(tmp_path: Path) -> None:
    path = secret(tmp_path, "token", "t0ken")
    assert problems({"upstream": {"token": "other", "token_file": path}}) == (
        "upstream.token_file: give either upstream.token or upstream.token_file, not both",
    )


def test_a_missing_or_empty_file_names_the_key_and_the_path_only(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    assert problems({"upstream": {"token_file": gone}}) == (
        f"upstream.token_file: cannot read {gone!r}: No such file or directory",
    )  # and no "no credentials" after it
    empty = secret(tmp_path, "empty", "\n")
    assert problems({"upstream": {"token_file": empty}}) == (
        f"upstream.token_file: {empty!r} is empty",
    )


def test_the_admin_files_are_not_read_while_admin_is_off(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    s = parse_config({"upstream": {"token": "t0ken"}, "admin": {"read_token_file": gone}}, env={})
    assert s.admin.read_token == ""
    assert s.admin.read_token_file == gone


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert problems({"upstream": {"token_file": str(fifo)}}) == (
        f"upstream.token_file: {str(fifo)!r} is not a regular file "
        "(a FIFO, a device or a directory)",
    )
    assert time.monotonic() - started < 1.0


def test_a_read_that_does_not_answer_is_given_up_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hung network mount: the read blocks in the kernel (here: sleeps)."""
    release = threading.Event()
    monkeypatch.setattr(secretfiles, "_read", lambda path: (release.wait(10), ("", "x"))[1])
    started = time.monotonic()
    with pytest.raises(secretfiles.SecretFileError) as caught:
        secretfiles.read_secret(str(tmp_path / "token"), deadline=0.2)
    release.set()
    assert str(caught.value) == f"no answer from {str(tmp_path / 'token')!r} within 0.2 s"
    assert time.monotonic() - started < 1.0


def test_a_file_too_long_for_a_secret_is_refused(tmp_path: Path) -> None:
    path = secret(tmp_path, "big", "x" * (secretfiles.MAX_SECRET_BYTES + 1))
    assert problems({"upstream": {"token_file": path}}) == (
        f"upstream.token_file: {path!r} is longer than 65536 bytes: not a secret",
    )
