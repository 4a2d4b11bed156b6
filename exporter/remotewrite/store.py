"""Pending and written minutes per account, on disk: exactly once across restarts.

Layout under the store's directory (``<traffic.state_file>.remote-write/``):
``<account>/<minute>.snappy`` is a minute waiting to be written (the request bytes, made once:
every retry resends them, read from the file each time it is sent, so pending minutes cost no
memory however long the receiver is down), ``written.json`` the minutes acknowledged, per
account, for as long as a minute can still be offered again (``max_age``). A minute is on
disk before the traffic ledger forgets its run, and leaves the pending set only once the
receiver acknowledged it (or refused it for good), so a crash at any point either resends
identical bytes (which the receiver stores once) or finds the minute already written.

Without a directory (no ``traffic.state_file``) the same is kept in memory only, and so is a
minute whose file could not be written.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, unquote

from exporter.support.ownfiles import read_own
from exporter.traffic.state import write_atomic

WRITTEN = "written.json"
SUFFIX = ".snappy"


class MinuteStore:
    """Thread-safe: ``offer`` runs on the traffic worker, ``done`` (it writes to disk) on another
    worker thread, the rest on the event loop."""

    def __init__(
        self,
        directory: str,
        max_age_seconds: float,
        failed: Callable[[str, OSError], None] = lambda what, exc: None,
        unreadable: Callable[[str, OSError], None] = lambda what, exc: None,
    ) -> None:
        self._dir = Path(directory) if directory else None
        self._failed = failed  # a write that failed (disk full, ...): kept in memory meanwhile
        self._unreadable = unreadable  # a pending minute's file gone when it was to be sent
        self._max_age = max_age_seconds
        self._lock = threading.Lock()
        # per account, the pending minutes: their bytes, or None when they are in their file
        self._pending: dict[str, dict[int, bytes | None]] = {}
        self._written: dict[str, set[int]] = {}
        if self._dir is not None:
            self._load(self._dir)

    def _load(self, root: Path) -> None:
        try:
            raw = json.loads((root / WRITTEN).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}
        if isinstance(raw, dict):
            for account, minutes in raw.items():
                if isinstance(minutes, list):
                    self._written[str(account)] = {int(m) for m in minutes if isinstance(m, int)}
        if not root.is_dir():
            return
        for sub in root.iterdir():
            if not sub.is_dir():
                continue
            account = unquote(sub.name)
            for f in sub.glob(f"*{SUFFIX}"):
                try:
                    minute = int(f.name.removesuffix(SUFFIX))
                except ValueError:
                    continue
                self._pending.setdefault(account, {})[minute] = None  # read when sent

    # -- the traffic side -------------------------------------------------------------------
    def offer(self, account: str, bodies: dict[int, bytes]) -> list[int]:
        """Keep the minutes not written or pending yet (each on disk before this returns);
        returns those taken. A minute offered again (a restart re-settled it) keeps its first
        bytes, so what is written never changes."""
        with self._lock:
            pending = self._pending.setdefault(account, {})
            written = self._written.get(account, set())
            taken = sorted(m for m in bodies if m not in pending and m not in written)
            for minute in taken:
                kept: bytes | None = bodies[minute]
                if self._dir is not None:
                    path = self._path(account, minute)
                    try:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        write_atomic(str(path), bodies[minute])
                        kept = None  # in its file
                    except OSError as exc:
                        self._failed(str(path), exc)
                pending[minute] = kept
            return taken

    def _path(self, account: str, minute: int) -> Path:
        assert self._dir is not None
        return self._dir / quote(account, safe="") / f"{minute}{SUFFIX}"

    # -- the sender's side ------------------------------------------------------------------
    def pending(self) -> dict[str, list[int]]:
        """Per account, the pending minutes oldest first (their bytes: ``body``)."""
        with self._lock:
            return {a: sorted(p) for a, p in self._pending.items() if p}

    def body(self, account: str, minute: int) -> bytes | None:
        """The bytes of a pending minute, read from its file (file I/O: off the event loop);
        None when it is no longer pending, or its file cannot be read: then it is said
        (``unreadable``) and left out, as a restart would leave it out."""
        with self._lock:
            pending = self._pending.get(account, {})
            if minute not in pending:
                return None
            kept = pending[minute]
            if kept is not None:
                return kept
            path = self._path(account, minute)
            try:
                return read_own(str(path))
            except OSError as exc:
                del pending[minute]
                self._unreadable(str(path), exc)
                return None

    def count(self, account: str) -> int:
        with self._lock:
            return len(self._pending.get(account, {}))

    def oldest(self, account: str) -> int | None:
        """The oldest pending minute of ``account`` (None: none pending)."""
        with self._lock:
            pending = self._pending.get(account)
            return min(pending) if pending else None

    def accounts(self) -> set[str]:
        with self._lock:
            return set(self._pending) | set(self._written)

    def newest_written(self, account: str) -> int | None:
        with self._lock:
            written = self._written.get(account)
            return max(written) if written else None

    def done(self, account: str, minute: int, now: float) -> None:
        """``minute`` is acknowledged (or refused for good): out of the pending set, into the
        written index (saved first, then the pending file removed)."""
        with self._lock:
            self._written.setdefault(account, set()).add(minute)
            oldest = now - self._max_age - 3600  # never offered again after this
            for minutes in self._written.values():
                minutes -= {m for m in minutes if m < oldest}
            snapshot = {a: sorted(m) for a, m in self._written.items() if m}
            self._pending.get(account, {}).pop(minute, None)
            if self._dir is None:
                return
            path = self._dir / WRITTEN
            try:
                self._dir.mkdir(parents=True, exist_ok=True)
                write_atomic(str(path), json.dumps(snapshot).encode())
                path = self._path(account, minute)
                path.unlink(missing_ok=True)
            except OSError as exc:
                self._failed(str(path), exc)
