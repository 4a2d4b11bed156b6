"""The leak guard: collects what the exporter wrote and says where a secret shows up."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

PLANTED = "SECRET"  # every credential the simulator and these tests plant contains it


@dataclass(repr=False)
class LeakGuard:
    """One test's outputs: the log stream the daemon writes to, and texts handed in."""

    log: io.StringIO  # what the daemon logs to (configure_logging's stream)
    texts: list[tuple[str, str]] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)
    # Called at scan time for secrets only known by then (tokens the simulator issued).
    sources: list[Callable[[], Iterable[str]]] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)  # found by check() as it went
    streamed: int = 0  # bytes check() scanned

    def __repr__(self) -> str:  # hypothesis prints fixtures with a failing example
        return f"LeakGuard({len(self.texts)} outputs)"

    def add(self, where: str, text: str | bytes) -> None:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        self.texts.append((where, text))

    def check(self, where: str, text: str | bytes) -> None:
        """Scan now and keep only the hits (long runs: the soak keeps no output around)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        self.streamed += len(text)
        self.hits.extend(self._find(where, text, self.secrets))

    def secret(self, *values: str) -> None:
        self.secrets.update(v for v in values if v)

    def outputs(self) -> list[tuple[str, str]]:
        return [("log", self.log.getvalue()), *self.texts]

    def scan(self) -> list[str]:
        """One line per hit: where, which secret, and the text around it."""
        known = set(self.secrets)
        for source in self.sources:
            known.update(s for s in source() if s)
        hits = list(self.hits)
        for where, text in self.outputs():
            hits += self._find(where, text, known)
        return hits[:20]

    @staticmethod
    def _find(where: str, text: str, known: set[str]) -> list[str]:
        needles = sorted({PLANTED, *known}, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(n) for n in needles))
        hits = []
        for m in pattern.finditer(text):
            around = text[max(0, m.start() - 80) : m.end() + 40].replace("\n", " | ")
            hits.append(f"{where}: {m.group(0)[:12]}... in ...{around}...")
            if len(hits) > 20:
                break
        return hits

    @property
    def scanned_bytes(self) -> int:
        return self.streamed + sum(len(text) for _, text in self.outputs())


class ScanningLog(io.StringIO):
    """A log stream that scans each write and keeps nothing (see LeakGuard.check)."""

    def __init__(self, guard: LeakGuard) -> None:
        super().__init__()
        self._guard = guard
        self.events: dict[str, int] = {}

    def write(self, text: str) -> int:
        self._guard.check("log", text)
        start = text.find('"msg": "')
        if start >= 0:
            name = text[start + 8 : text.find('"', start + 8)]
            self.events[name] = self.events.get(name, 0) + 1
        return len(text)


@dataclass
class Session:
    """Totals over the run, printed in the terminal summary."""

    tests: int = 0
    scanned: int = 0
    sources: int = 0

    def record(self, guard: LeakGuard) -> None:
        self.tests += 1
        self.scanned += guard.scanned_bytes
        self.sources += len(guard.outputs())

    def summary(self) -> str:
        return (
            f"leak guard: {self.tests} tests, {self.sources} outputs, "
            f"{self.scanned / 1e6:.1f} MB scanned for planted secrets and tokens"
        )


SESSION = Session()
