"""The standing audit: what was counted for each settled window (48 h), re-read and compared.

Exposition example::

    cdnvideo_traffic_audit_seconds_total{account="acme",result="equal"} 3600
    cdnvideo_traffic_audit_seconds_total{account="acme",result="differs"} 0
    cdnvideo_traffic_audit_difference{account="acme",family="edge_requests_total"} 0
    cdnvideo_traffic_audit_last_timestamp_seconds{account="acme"} 1767312000

Per account the book keeps, for every window whose last settle read is done, the account
totals counted for it (every counted key). An audit starts once a day (the first as soon as
windows covering ``sample_minutes`` are eligible): it picks windows at least
``settled_for_seconds`` past their last settle read, at random, until they cover
``sample_minutes`` (every eligible window of the last day when ``everything`` is asked for);
each is re-read, one window at a time, and compared key by key. The figures of an audit are
published when its last window is compared.
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass, field
from typing import Any

from exporter.exposition import Fragment, MetricSpec
from exporter.traffic.parse import COUNT_INDEX, COUNT_KEYS, Values
from exporter.traffic.windows import MINUTE, Window

KEEP_SECONDS = 48 * 3600.0  # counted windows are kept this long after their last settle read
AUDIT_EVERY_SECONDS = 86_400.0
SETTLED_FOR_SECONDS = 3600.0  # a window is audited at least this long after its last settle
SAMPLE_MINUTES = 60
RESULTS = ("equal", "differs")

# PRODUCT.md names it ..._audit_minutes_total; promtool check metrics rejects a unit other than
# seconds in a name, so it counts seconds of traffic (60 per minute audited).
MINUTES = MetricSpec(
    "cdnvideo_traffic_audit_seconds_total",
    "counter",
    "Seconds of traffic (60 per minute) the daily audit re-read from the platform, by whether "
    "every counted family equals what the platform now reports (equal) or not (differs).",
    ("account", "result"),
    "seconds",
    "audit re-reads of settled windows, account totals",
)
DIFFERENCE = MetricSpec(
    "cdnvideo_traffic_audit_difference",
    "gauge",
    "Platform minus counted over the minutes of the latest audit, per counted key (family: the "
    "platform's metric name, or edge_/origin_transferred_bytes), in that key's unit.",
    ("account", "family"),
    "requests, responses or bytes",
    "audit re-reads of settled windows, account totals",
)
LAST = MetricSpec(
    "cdnvideo_traffic_audit_last_timestamp_seconds",
    "gauge",
    "Unix time the latest audit of the account was completed.",
    ("account",),
    "seconds",
    "audit",
)
AUDIT_SPECS = (MINUTES, DIFFERENCE, LAST)


@dataclass(slots=True)
class Counted:
    """What was counted for one settled window (account totals, COUNT_KEYS order)."""

    start: int
    end: int
    settled_at: float
    totals: Values

    @property
    def window(self) -> Window:
        return Window(self.start, self.end)

    @property
    def minutes(self) -> int:
        return (self.end - self.start) // MINUTE


@dataclass(slots=True)
class Outcome:
    """A completed audit: minutes compared, and platform minus counted per key."""

    at: float
    equal: int
    differs: int
    difference: Values


@dataclass(slots=True)
class AccountAudit:
    """One account's record of counted windows, the audit under way, and the results."""

    counted: list[Counted] = field(default_factory=list)
    sample: list[Counted] = field(default_factory=list)  # still to re-read in this audit
    due_at: float = 0.0  # when the next audit starts (0: once enough windows are eligible)
    minutes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RESULTS, 0))
    running: Outcome | None = None  # the audit under way
    last: Outcome | None = None  # the latest completed audit


@dataclass(frozen=True, slots=True)
class Policy:
    """What an audit samples (docs/windowing.md, "The standing audit")."""

    sample_minutes: int = SAMPLE_MINUTES
    settled_for_seconds: float = SETTLED_FOR_SECONDS
    every_seconds: float = AUDIT_EVERY_SECONDS
    keep_seconds: float = KEEP_SECONDS


DEFAULT_POLICY = Policy()


class AuditBook:
    """Every account's audit record; pure bookkeeping (the poller does the reads)."""

    def __init__(self, policy: Policy = DEFAULT_POLICY, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.accounts: dict[str, AccountAudit] = {}
        self._rng = rng or random.Random()
        self.dirty = False

    def account(self, name: str) -> AccountAudit:
        a = self.accounts.get(name)
        if a is None:
            a = self.accounts[name] = AccountAudit()
        return a

    def forget(self, account: str) -> None:
        """Drop ``account``'s record (it left this replica; the record file loses it too)."""
        if self.accounts.pop(account, None) is not None:
            self.dirty = True

    def settled(self, account: str, window: Window, totals: Values, now: float) -> None:
        """A window's last settle read is done: keep what was counted for it."""
        a = self.account(account)
        a.counted.append(Counted(window.start, window.end, now, array("d", totals)))
        oldest = now - self.policy.keep_seconds
        a.counted = [c for c in a.counted if c.settled_at >= oldest]
        self.dirty = True

    def next_window(self, account: str, now: float, everything: bool = False) -> Counted | None:
        """The window to re-read next for ``account`` (an audit starts when one is due)."""
        a = self.accounts.get(account)
        if a is None:
            return None
        if not a.sample and now >= a.due_at:
            self._start(a, now, everything)
        return a.sample[0] if a.sample else None

    def _start(self, a: AccountAudit, now: float, everything: bool) -> None:
        p = self.policy
        eligible = [
            c
            for c in a.counted
            if c.settled_at + p.settled_for_seconds <= now
            and c.settled_at >= now - p.every_seconds - p.settled_for_seconds
        ]
        if sum(c.minutes for c in eligible) < p.sample_minutes:
            return  # not enough yet: the first audit waits for them
        if not everything:
            self._rng.shuffle(eligible)
            chosen: list[Counted] = []
            for c in eligible:
                if sum(x.minutes for x in chosen) >= p.sample_minutes:
                    break
                chosen.append(c)
            eligible = chosen
        a.sample = sorted(eligible, key=lambda c: c.start)
        a.running = Outcome(now, 0, 0, array("d", [0.0]) * len(COUNT_KEYS))
        a.due_at = now + p.every_seconds
        self.dirty = True

    def compare(self, account: str, counted: Counted, platform: Values, now: float) -> bool:
        """The platform's figures for ``counted``'s window, read now; returns whether equal.
        A key counted but now absent on the platform counts as a difference of -counted."""
        a = self.account(account)
        if counted in a.sample:
            a.sample.remove(counted)
        run = a.running or Outcome(now, 0, 0, array("d", [0.0]) * len(COUNT_KEYS))
        equal = True
        for i, (mine, theirs) in enumerate(zip(counted.totals, platform, strict=True)):
            m = mine if mine == mine else 0.0
            t = theirs if theirs == theirs else 0.0
            if t != m:
                equal = False
                run.difference[i] += t - m
        result = "equal" if equal else "differs"
        a.minutes[result] += counted.minutes
        if equal:
            run.equal += counted.minutes
        else:
            run.differs += counted.minutes
        a.running = run
        if not a.sample:
            a.last, a.running = Outcome(now, run.equal, run.differs, run.difference), None
        self.dirty = True
        return equal

    def skip(self, account: str, counted: Counted) -> None:
        """Leave a window out of the audit under way (the platform would not answer it)."""
        a = self.account(account)
        if counted in a.sample:
            a.sample.remove(counted)
            self.dirty = True

    def fragment(self, account: str) -> Fragment:
        """The audit families of one account (the minutes counter from the start)."""
        a = self.account(account)
        out: dict[MetricSpec, list[tuple[tuple[str, ...], float]]] = {
            MINUTES: [((account, r), float(a.minutes[r] * MINUTE)) for r in RESULTS]
        }
        if a.last is not None:
            out[DIFFERENCE] = [
                ((account, key), a.last.difference[i]) for i, key in enumerate(COUNT_KEYS)
            ]
            out[LAST] = [((account,), a.last.at)]
        return Fragment(out)

    # -- the file beside the state file ---------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        def enc(v: Values) -> list[float | None]:
            return [None if x != x else x for x in v]

        def outcome(o: Outcome | None) -> list[Any] | None:
            return None if o is None else [o.at, o.equal, o.differs, enc(o.difference)]

        return {
            "count_keys": list(COUNT_KEYS),
            "accounts": {
                name: {
                    "counted": [[c.start, c.end, c.settled_at, enc(c.totals)] for c in a.counted],
                    "sample": [a.counted.index(c) for c in a.sample if c in a.counted],
                    "due_at": a.due_at,
                    "minutes": dict(a.minutes),
                    "running": outcome(a.running),
                    "last": outcome(a.last),
                }
                for name, a in self.accounts.items()
            },
        }

    def load_json(self, doc: dict[str, Any]) -> None:
        """Restore what ``to_json`` wrote (raises KeyError/TypeError/ValueError if not ours)."""
        keys = list(doc["count_keys"])
        place = [COUNT_INDEX.get(key, -1) for key in keys]  # each key's index here, or -1

        def dec(raw: list[float | None]) -> Values:
            out = array("d", [float("nan")]) * len(COUNT_KEYS)
            for i, x in zip(place, raw, strict=True):
                if i >= 0 and x is not None:
                    out[i] = float(x)
            return out

        def outcome(raw: list[Any] | None) -> Outcome | None:
            if raw is None:
                return None
            diff = dec(raw[3])
            return Outcome(
                float(raw[0]),
                int(raw[1]),
                int(raw[2]),
                array("d", (x if x == x else 0.0 for x in diff)),
            )

        for name, d in doc["accounts"].items():
            a = AccountAudit()
            a.counted = [Counted(int(s), int(e), float(t), dec(v)) for s, e, t, v in d["counted"]]
            a.sample = [a.counted[int(i)] for i in d["sample"]]
            a.due_at = float(d["due_at"])
            a.minutes = {r: int(d["minutes"].get(r, 0)) for r in RESULTS}
            a.running, a.last = outcome(d["running"]), outcome(d["last"])
            self.accounts[str(name)] = a
