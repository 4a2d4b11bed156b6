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

    log: io.StringIO
    texts: list[tuple[str, str]] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)
    # Called at scan time for secrets only known by then (tokens the simulator issued).
    sources: list[Callable[[], Iterable[str]]] = field(default_factory=list)

    def __repr__(self) -> str:  # hypothesis prints fixtures with a failing example
        return f"LeakGuard({len(self.texts)} outputs)"

    def add(self, where: str, text: str | bytes) -> None:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        self.texts.append((where, text))

    def secret(self, *values: str) -> None:
        self.secrets.update(v for v in values if v)

    def outputs(self) -> list[tuple[str, str]]:
        return [("log", self.log.getvalue()), *self.texts]

    def scan(self) -> list[str]:
        """One line per hit: where, which secret, and the text around it."""
        known = set(self.secrets)
        for source in self.sources:
            known.update(s for s in source() if s)
        needles = sorted({PLANTED, *known}, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(n) for n in needles))
        hits = []
        for where, text in self.outputs():
            for m in pattern.finditer(text):
                around = text[max(0, m.start() - 80) : m.end() + 40].replace("\n", " | ")
                hits.append(f"{where}: {m.group(0)[:12]}... in ...{around}...")
                if len(hits) > 20:
                    return hits
        return hits

    @property
    def scanned_bytes(self) -> int:
        return sum(len(text) for _, text in self.outputs())


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
