"""Config fuzzing through ``cdnvideo-exporter check-config``: a clear message, never a traceback.

Documents are mutations of a valid config whose secrets all contain ``SECRET`` (missing
keys, wrong types, nulls, unknown keys, huge numbers, NaN, empty values, wrapped values),
optionally cut short or sprinkled with stray characters, or plain bytes. Whatever comes in,
``check-config`` exits 0 with the masked config or 1 with one ``config error:`` line naming
the key, and no secret shows up in either.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.cli import main

from .leaks import PLANTED, LeakGuard
from .procs import ROOT, child_env
from .tamper import apply, ops

BASE: dict[str, Any] = {
    "upstream": {
        "base_url": "https://api.cdnvideo.example",
        "token": "cfg-SECRET-token-1f",
        "timeout_seconds": 10,
        "max_concurrency": 8,
    },
    "accounts": [{"name": "acme", "dvr_streams": ["live/main", "news"]}],
    "traffic": {"delay_seconds": 120, "revisit_minutes": 5, "state_file": "/tmp/x.json"},
    "restream": {"enabled": True, "interval_seconds": 30, "history_interval_seconds": 300},
    "dvr": {"interval_seconds": 60},
    "talking_head": {"interval_seconds": 21600},
    "listen": "0.0.0.0:9877",
    "shard": "0/1",
    "admin": {
        "enabled": True,
        "read_token": "cfg-SECRET-read-2a",
        "write_token": "cfg-SECRET-write-3b",
    },
    "log": {"level": "info", "format": "json"},
}
LOGIN = {"base_url": "https://api.cdnvideo.example", "username": "ops", "password": "cfg-SECRET-pw"}
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    doc: Any = dict(BASE)
    if draw(st.booleans()):
        doc["upstream"] = dict(LOGIN)
    for op in draw(st.lists(ops, max_size=4)):
        doc = apply(doc, op)
    text = yaml.safe_dump(doc, sort_keys=False).encode()
    damage = draw(st.sampled_from(["none", "none", "cut", "insert", "bytes"]))
    if damage == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif damage == "insert":
        at = draw(st.integers(0, len(text)))
        junk = draw(st.text(alphabet=":{}[]-#&*!|>'\"%@`, \n\t\\", min_size=1, max_size=4))
        text = text[:at] + junk.encode() + text[at:]
    elif damage == "bytes":
        text = draw(st.binary(max_size=64)) + text[: draw(st.integers(0, 40))]
    return text


def check_config(
    path: Path, capsys: pytest.CaptureFixture[str], guard: LeakGuard
) -> tuple[int, str, str]:
    code = main(["check-config", "--config", str(path)])
    out, err = capsys.readouterr()
    guard.add("check-config stdout", out)
    guard.add("check-config stderr", err)
    return code, out, err


def assert_clear(code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err
    assert PLANTED not in out + err, "a secret in check-config's output"
    if code == 0:
        assert isinstance(yaml.safe_load(out), dict)
        assert all(line.startswith(("warning: ", "note: ")) for line in err.splitlines())
    else:
        assert code == 1
        assert out == ""
        assert err.startswith("config error: ")
        lines = err.removesuffix("\n").split("\n")  # one line a problem: the key, what is wrong
        assert all(line.startswith("config error: ") for line in lines), err


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("CDNVIDEO_")]:
        monkeypatch.delenv(name)


@SETTINGS
@given(document=documents())
def test_any_config_ends_in_the_config_or_one_clear_error(
    document: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str], leak_guard: LeakGuard
) -> None:
    path = tmp_path / "config.yml"
    path.write_bytes(document)
    assert_clear(*check_config(path, capsys, leak_guard))


SHAPES = {
    "empty": b"",
    "binary": bytes(range(256)),
    "latin-1": "upstream: {token: caf\xe9}".encode("latin-1"),
    "deep nesting": b"[" * 5000 + b"]" * 5000,
    "a list": b"- a\n- b\n",
    "anchors": b"a: &a [*a]\n",
    "huge number": b"upstream: {token: t, timeout_seconds: 1e999}\n",
    "date": b"traffic: {state_file: 2026-13-01}\nupstream: {token: t}\n",
    "secret wrapped": b"upstream: {token: [cfg-SECRET-token-1f]}\n",
    "secret section": b"admin: [{read_token: cfg-SECRET-read-2a}]\nupstream: {token: t}\n",
}


@pytest.mark.parametrize("name", SHAPES)
def test_odd_files_end_in_one_clear_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], leak_guard: LeakGuard
) -> None:
    path = tmp_path / "config.yml"
    path.write_bytes(SHAPES[name])
    code, out, err = check_config(path, capsys, leak_guard)
    assert code == 1, (out, err)
    assert_clear(code, out, err)


@pytest.mark.parametrize("target", ["missing", "directory"])
def test_unreadable_config_path_ends_in_one_clear_error(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], leak_guard: LeakGuard
) -> None:
    path = tmp_path / "config.yml"
    if target == "directory":
        path.mkdir()
    code, out, err = check_config(path, capsys, leak_guard)
    assert code == 1
    assert_clear(code, out, err)


def test_the_real_command_exits_1_without_a_traceback(
    tmp_path: Path, leak_guard: LeakGuard
) -> None:
    path = tmp_path / "config.yml"
    path.write_bytes(b"upstream: {token: [cfg-SECRET-token-1f]}\nlisten: nowhere\n")
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check-config", "--config", str(path)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=60,
    )
    leak_guard.add("check-config process", done.stdout + done.stderr)
    assert_clear(done.returncode, done.stdout, done.stderr)
    assert done.returncode == 1


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_short_admin_token_is_refused_with_how_to_make_one(
    tmp_path: Path, leak_guard: LeakGuard, command: str
) -> None:
    path = tmp_path / "config.yml"
    path.write_text(
        "upstream: {token: cfg-SECRET-token-1f}\n"
        "admin: {enabled: true, write_token: SECRET-short}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "exporter", command, "--config", str(path)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=60,
    )
    leak_guard.add(f"{command} process", done.stdout + done.stderr)
    assert done.returncode == 1
    assert "SECRET-short" not in done.stdout + done.stderr
    assert done.stderr.strip() == (
        "config error: admin.write_token: at least 16 characters, got 12; generate one with "
        'python -c "import secrets; print(secrets.token_urlsafe(32))" (line 2)'
    )
