"""Restream resources, and target status as one seeded function of time (status and history).

A target's code at time t, first rule that applies:
1. a forced code (test/demo control) covering t;
2. 7 "Restream stopped" when the resource is inactive;
3. with a schedule, outside every window: 5 "No status changes found" before the first window
   has started, 7 "Restream stopped" after one has ended;
4. otherwise a per-(resource, source) slot code: slots of 10-40 minutes, each 0 (88%),
   3 "Source stream is not published" (8%) or 2 "Source stream not found" (4%).
History lists the instants where that function changes value, so it always agrees with status.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from exporter.simulator.hashing import key_hash, mix, unit
from exporter.simulator.restream_validate import parse_iso_z
from exporter.support.clock import Clock

STATUS_TEXT = {
    0: "OK",
    2: "Source stream not found",
    3: "Source stream is not published",
    5: "No status changes found",
    7: "Restream stopped",
}
TargetId = tuple[str, str, str]  # source, target_url, target_key
Status = tuple[int, str]


@dataclass
class Version:
    since: int
    body: dict[str, Any]


@dataclass
class Resource:
    resource_id: str
    creation_ts: int
    modification_ts: int
    versions: list[Version] = field(default_factory=list)

    @property
    def body(self) -> dict[str, Any]:
        return self.versions[-1].body

    def version_at(self, t: float) -> Version | None:
        found = None
        for v in self.versions:
            if v.since <= t:
                found = v
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "resource_id": self.resource_id,
            **copy.deepcopy(self.body),
            "creation_ts": self.creation_ts,
            "modification_ts": self.modification_ts,
        }


@dataclass
class Force:
    since: int
    until: int | None
    code: int
    description: str


def target_id(entry: dict[str, Any]) -> TargetId:
    return (entry["source"], entry["target_url"], entry["target_key"])


def _windows(entry: dict[str, Any]) -> list[tuple[int, int]]:
    return [(parse_iso_z(w["start"]), parse_iso_z(w["stop"])) for w in entry["schedule"]]


class RestreamState:
    """All restream resources of all accounts, and the status function over them."""

    def __init__(self, seed: int, clock: Clock, seeds: dict[str, list[dict[str, Any]]]) -> None:
        self._seed = seed
        self._clock = clock
        self._forces: dict[tuple[str, str, str], list[Force]] = {}
        self.resources: dict[str, dict[str, Resource]] = {}
        created = int(clock.time()) // 60 * 60 - 30 * 86400
        for account, bodies in seeds.items():
            table: dict[str, Resource] = {}
            for b in bodies:
                body = {k: v for k, v in b.items() if k != "resource_id"}
                table[b["resource_id"]] = Resource(
                    b["resource_id"], created, created, [Version(created, body)]
                )
            self.resources[account] = table

    def _now(self) -> int:
        return int(self._clock.time())

    # --- CRUD -------------------------------------------------------------------------------
    def create(self, account: str, body: dict[str, Any]) -> str:
        table = self.resources[account]
        numbers = [int(r) for r in table if r.isdigit()]
        rid = str(max(numbers, default=(list(self.resources).index(account) + 1) * 1000) + 1)
        now = self._now()
        table[rid] = Resource(rid, now, now, [Version(now, copy.deepcopy(body))])
        return rid

    def replace(self, account: str, rid: str, body: dict[str, Any]) -> None:
        res = self.resources[account][rid]
        now = self._now()
        res.versions.append(Version(now, copy.deepcopy(body)))
        res.modification_ts = now

    # --- forced codes -----------------------------------------------------------------------
    def force(self, account: str, rid: str, target_url: str, code: int, description: str) -> None:
        res = self.resources[account][rid]
        if not any(e["target_url"] == target_url for e in res.body["restreams"]):
            raise KeyError(f"resource {rid} has no target {target_url!r}")
        self.clear_force(account, rid, target_url)
        now = self._now()
        self._forces.setdefault((account, rid, target_url), []).append(
            Force(now, None, code, description)
        )

    def clear_force(self, account: str, rid: str, target_url: str | None = None) -> None:
        now = self._now()
        for (acc, r, url), forces in self._forces.items():
            if acc == account and r == rid and target_url in (None, url):
                for f in forces:
                    if f.until is None:
                        f.until = now

    def clear_all_forces(self) -> None:
        for forces in self._forces.values():
            for f in forces:
                if f.until is None:
                    f.until = self._now()

    def _forced(self, account: str, rid: str, url: str, t: float) -> Force | None:
        for f in reversed(self._forces.get((account, rid, url), [])):
            if f.since <= t and (f.until is None or t < f.until):
                return f
        return None

    # --- the status function ----------------------------------------------------------------
    def _slot_key(self, account: str, rid: str, source: str) -> int:
        return key_hash(self._seed, "restream-status", account, rid, source)

    @staticmethod
    def _slot(key: int) -> tuple[int, int]:
        length = 600 + key % 1800
        return length, (key >> 16) % length

    def _boundary(self, key: int, k: int) -> int:
        length, offset = self._slot(key)
        return offset + k * length + int(unit(mix(key ^ k)) * (length // 3))

    def _slot_code(self, key: int, t: float) -> int:
        length, offset = self._slot(key)
        k = int((t - offset) // length)
        if t < self._boundary(key, k):
            k -= 1
        u = unit(mix((key * 31) ^ k))
        return 0 if u < 0.88 else 3 if u < 0.96 else 2

    def status_at(self, account: str, res: Resource, tid: TargetId, t: float) -> Status | None:
        """The code of one target at time t; None when the target did not exist then."""
        version = res.version_at(t)
        if version is None:
            return None
        entry = next((e for e in version.body["restreams"] if target_id(e) == tid), None)
        if entry is None:
            return None
        forced = self._forced(account, res.resource_id, tid[1], t)
        if forced is not None:
            return forced.code, forced.description
        if not version.body["active"]:
            return 7, STATUS_TEXT[7]
        windows = _windows(entry)
        if windows and not any(a <= t < b for a, b in windows):
            code = 7 if any(b <= t for _, b in windows) else 5
            return code, STATUS_TEXT[code]
        code = self._slot_code(self._slot_key(account, res.resource_id, tid[0]), t)
        return code, STATUS_TEXT[code]

    def status(self, account: str, res: Resource) -> list[dict[str, Any]]:
        now = self._now()
        out = []
        for e in res.body["restreams"]:
            code, text = self.status_at(account, res, target_id(e), now) or (5, STATUS_TEXT[5])
            out.append(
                {
                    "status": {"code": code, "description": text},
                    "source": e["source"],
                    "target_url": e["target_url"],
                    "target_key": e["target_key"],
                }
            )
        return out

    def _candidates(self, account: str, res: Resource, tid: TargetId, lo: int, hi: int) -> set[int]:
        """Every instant in [lo, hi] where the status function may change value."""
        times = {v.since for v in res.versions}
        for v in res.versions:
            for e in v.body["restreams"]:
                if target_id(e) == tid:
                    for a, b in _windows(e):
                        times.update((a, b))
        for f in self._forces.get((account, res.resource_id, tid[1]), []):
            times.add(f.since)
            if f.until is not None:
                times.add(f.until)
        key = self._slot_key(account, res.resource_id, tid[0])
        length, offset = self._slot(key)
        k = (lo - offset) // length - 1
        while True:
            b = self._boundary(key, k)
            if b > hi:
                break
            times.add(b)
            k += 1
        return {t for t in times if lo <= t <= hi}

    def history(self, account: str, res: Resource, lo: int, hi: int) -> list[dict[str, Any]]:
        """Change points per source -> target_url -> target_key, ascending, within [lo, hi]."""
        tids: list[TargetId] = []
        for v in res.versions:
            for e in v.body["restreams"]:
                tid = target_id(e)
                if tid not in tids:
                    tids.append(tid)
        grouped: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
        for tid in tids:
            points: list[dict[str, Any]] = []
            prev = self.status_at(account, res, tid, lo - 1)
            for t in sorted(self._candidates(account, res, tid, lo, hi)):
                cur = self.status_at(account, res, tid, t)
                if cur is not None and cur != prev:
                    points.append({"code": cur[0], "description": cur[1], "time": t})
                prev = cur
            alive = any(
                tid == target_id(e)
                for v in res.versions
                for e in v.body["restreams"]
                if v.since <= hi
            )
            if alive:
                grouped.setdefault(tid[0], {}).setdefault(tid[1], {})[tid[2]] = points
        return [{"source": s, "history": h} for s, h in grouped.items()]
