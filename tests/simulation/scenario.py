"""What one seed draws: a simulated day of the platform and of the daemon's life.

``draw(seed)`` is the only source of randomness of a run (``random.Random(seed)``); the
scenario is plain data, printed by ``--verbose`` so a failing seed can be read before it is
replayed. Conditions are drawn independently, so a day usually holds several at once.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any

from exporter.traffic.windows import MAX_WINDOW_MINUTES, settle_window_minutes

T0 = 1_767_225_600 + 6 * 3600  # 2026-01-01T06:00:00Z: the simulated day starts here
SCHEDULES: tuple[int | tuple[int, ...], ...] = (
    5, 5, 3, 0, 10, (5, 15, 60), (2, 10, 30), (1, 4), (5, 60), (2, 5), (1, 3, 20),
)  # fmt: skip
DAY_LONG = (5, 60, 1440)  # the longest schedule a config takes: an age of a day
OUTAGE_KINDS = ("503", "504", "500", "timeout", "refused")
CHURN_SHARE = 0.3  # days whose resources are added, renamed and deleted (quirk resource-churn)
# days without resource churn whose platform revises a minute an hour after it was final
# (quirk revise-after-settle: the standing audit must find exactly those)
REVISE_SHARE = 0.3
REMOTE_WRITE_SHARE = 0.5  # days whose daemon writes each final minute by remote write
# days with a second replica of the same shard (docs/deploy.md, high availability): it polls
# the same accounts of the same platform, its own state file, under the platform's one limit
PAIR_SHARE = 0.15
# what the second replica of a pair lives through of a day's events: the platform's and the
# host's (an outage, error bodies, a clock step or drift, discovery leaving an account out);
# the rest (restarts, reloads, its volume, the receiver) are the first replica's own
PAIR_EVENTS = frozenset({"outage", "error_bodies", "clock", "drift"})
# Prometheus' scrape interval of a day (seconds): the compose file's 15 s, and 60 s, the
# interval of many installations (a key held at 0 waits longer for a scrape that reads it).
SCRAPE_INTERVALS = (15.0, 60.0, 60.0)
# What a restart may leave of the state file (harness.World.damage): bytes that are not JSON,
# the file cut in half, or the file as the previous release wrote it (`stage`, not `settled`).
STATE_DAMAGE = ("corrupt", "truncated", "previous")
QUIET_END_SECONDS = 3600  # nothing is drawn in the last hour: the day ends settled


@dataclass(frozen=True)
class Daemon:
    """The part of the daemon's config a restart may change (``traffic.*``, ``upstream.*``)."""

    revisit: int | tuple[int, ...] = 5
    budget: int = 0  # upstream.max_requests_per_minute (0: none)
    resource_status_codes: str = "codes"
    per_resource: bool = True
    max_resources: int = 0  # traffic.max_resources (0: every resource its own series)
    resources_include: str = ".*"  # traffic.resources_include
    resources_exclude: str = ""  # traffic.resources_exclude
    retention_hours: float = 24.0  # traffic.series_retention_hours

    def cost(self) -> float:
        """What the exporter's budget check asks for this schedule (its own rule)."""
        per = 2.0 if self.per_resource else 1.0
        stages = (self.revisit,) if isinstance(self.revisit, int) else self.revisit
        stages = tuple(a for a in stages if a)
        longest = MAX_WINDOW_MINUTES
        return per + sum(per / settle_window_minutes(a, stages, longest) for a in stages)

    def stages(self) -> tuple[int, ...]:
        r = self.revisit
        return ((r,) if r else ()) if isinstance(r, int) else tuple(r)


@dataclass(frozen=True)
class Event:
    """Something that happens at ``at`` seconds after ``T0`` (platform clock)."""

    at: int
    kind: str  # see harness.World.apply
    args: tuple[tuple[str, Any], ...] = ()

    def arg(self, name: str, default: Any = None) -> Any:
        return dict(self.args).get(name, default)

    def __str__(self) -> str:
        detail = " ".join(f"{k}={v}" for k, v in self.args)
        return f"+{self.at // 60:>4} min {self.kind} {detail}".rstrip()


@dataclass(frozen=True)
class Scenario:
    seed: int
    minutes: int
    accounts: tuple[str, ...]
    resources: int
    late_seconds: float
    late_half_seconds: float
    quirks: tuple[str, ...]
    platform_limit: int  # simulator api_requests_per_minute (0: none)
    delay_seconds: int
    catch_up_minutes: int
    discovery: bool
    daemon: Daemon
    events: tuple[Event, ...] = field(default_factory=tuple)
    remote_write: bool = False  # each final minute written to a receiver (docs/remote-write.md)
    scrape_seconds: float = 15.0  # Prometheus' scrape interval
    pair: bool = False  # a second replica of the same shard beside the daemon (``PAIR_SHARE``)

    def twin(self) -> Scenario:
        """The second replica's day: the same platform and settings, the events it lives
        through (``PAIR_EVENTS``; with discovery, accounts leaving and coming back too), and
        remote write off (one replica of a shard writes: docs/remote-write.md)."""
        kinds = PAIR_EVENTS | ({"unlist", "relist"} if self.discovery else frozenset())
        events = tuple(e for e in self.events if e.kind in kinds)
        return replace(self, events=events, remote_write=False, pair=False)

    def describe(self) -> list[str]:
        head = (
            f"seed {self.seed}: {self.minutes} min, accounts {','.join(self.accounts)} x "
            f"{self.resources} resources, late {self.late_seconds:.0f} s"
            f"{f' (half {self.late_half_seconds:.0f} s)' if self.late_half_seconds else ''}, "
            f"quirks {','.join(self.quirks) or '-'}, platform limit {self.platform_limit or '-'}"
            f"/min, delay {self.delay_seconds} s, catch_up {self.catch_up_minutes} min, "
            f"{'discovery' if self.discovery else 'static list'}, revisit {self.daemon.revisit}, "
            f"budget {self.daemon.budget or '-'}, status codes {self.daemon.resource_status_codes}"
        )
        d = self.daemon
        paths = (
            f"per_resource {d.per_resource}, max_resources {d.max_resources}, resources "
            f"include {d.resources_include!r} exclude {d.resources_exclude!r}, series retention "
            f"{d.retention_hours} h"
        )
        head = f"{head}, {paths}{', remote write' if self.remote_write else ''}"
        head = f"{head}, scraped every {self.scrape_seconds:.0f} s"
        head = f"{head}{', a second replica of the shard beside it' if self.pair else ''}"
        return [head, *(f"  {e}" for e in self.events)]


def draw(seed: int, minutes: int = 1440) -> Scenario:
    """The scenario of ``seed``: a day of ``minutes`` with conditions drawn independently."""
    rnd = random.Random(seed)
    n_accounts = rnd.choice((1, 1, 2, 2, 3))
    accounts = tuple(f"acc{i}" for i in range(1, n_accounts + 1))
    late = rnd.choice((0.0, 60.0, 300.0, 600.0, 900.0, 1800.0))
    half = rnd.choice((0.0, 0.0, 60.0)) if late > 60 else 0.0
    quirks: list[str] = []
    for name, p in (
        ("one-minute-window", 0.15),
        ("slow-long-windows", 0.12),
        ("bogus-date", 0.15),
        ("status-key", 0.2),
        ("string-values", 0.2),
    ):
        if rnd.random() < p:
            quirks.append(name)
    limit = 0
    if rnd.random() < 0.25:
        limit = rnd.choice((6, 8, 12, 20, 30))
        shape = rnd.choice(("", "rate-limit-420", "rate-limit-200"))
        if shape:
            quirks.append(shape)
    daemon = Daemon(revisit=rnd.choice(SCHEDULES))
    if rnd.random() < 0.25:
        daemon = replace(daemon, budget=math.ceil(daemon.cost()) + rnd.choice((0, 0, 1, 2, 4)))
    if rnd.random() < 0.15:
        daemon = replace(daemon, resource_status_codes="classes")
    scenario = Scenario(
        seed=seed,
        minutes=minutes,
        accounts=accounts,
        resources=rnd.choice((1, 2, 3, 4)),
        late_seconds=late,
        late_half_seconds=half,
        quirks=tuple(quirks),
        platform_limit=limit,
        delay_seconds=rnd.choice((120, 120, 120, 60, 180)),
        catch_up_minutes=rnd.choice((60, 60, 30, 120)),
        discovery=rnd.random() < 0.4,
        daemon=daemon,
    )
    scenario = replace(scenario, events=tuple(sorted(_events(rnd, scenario), key=_order)))
    # Drawn apart (its own stream), so the seeds drawn before churn came keep their days.
    if random.Random(f"churn {seed}").random() < CHURN_SHARE:
        scenario = replace(scenario, quirks=(*scenario.quirks, "resource-churn"))
    if "resource-churn" not in scenario.quirks and (
        random.Random(f"revise {seed}").random() < REVISE_SHARE
    ):
        scenario = replace(scenario, quirks=(*scenario.quirks, "revise-after-settle"))
    scenario = _paths(random.Random(f"paths {seed}"), scenario)
    written = random.Random(f"remote write {seed}").random() < REMOTE_WRITE_SHARE
    scrape = random.Random(f"scrape {seed}").choice(SCRAPE_INTERVALS)
    scenario = replace(scenario, remote_write=written, scrape_seconds=scrape)
    scenario = _receiver(random.Random(f"receiver {seed}"), scenario)
    if random.Random(f"pair {seed}").random() < PAIR_SHARE:
        scenario = replace(scenario, pair=True)
    return _day_long(random.Random(f"day-long {seed}"), scenario)


RECEIVER_ANSWERS = ("refused", "503", "403")  # connection refused, a 5xx, a receiver misset


def _receiver(rnd: random.Random, s: Scenario) -> Scenario:
    """On a third of the days with remote write, the receiver down or refusing for 5 to 120
    minutes (``RECEIVER_ANSWERS``), drawn from a stream of its own: every minute owed must
    reach it once it accepts again (docs/remote-write.md, retried with the same bytes)."""
    span = s.minutes * 60 - QUIET_END_SECONDS
    if not s.remote_write or span < 600 or rnd.random() >= 1 / 3:
        return s
    start = 60 * rnd.randrange(5, span // 60)
    minutes = rnd.choice((5, 30, 120))
    answer = rnd.choice(RECEIVER_ANSWERS)
    events = (
        *s.events,
        Event(start, "receiver", (("answer", answer),)),
        Event(min(span, start + minutes * 60), "receiver", (("answer", ""),)),
    )
    return replace(s, events=tuple(sorted(events, key=_order)))


def _day_long(rnd: random.Random, s: Scenario) -> Scenario:
    """A settle schedule a day long (``DAY_LONG``), from the start or from a restart on,
    drawn from a stream of its own (the other draws of a seed stay as they were)."""
    if rnd.random() < 0.05:
        return replace(s, daemon=replace(s.daemon, revisit=DAY_LONG))
    restarts = [i for i, e in enumerate(s.events) if e.kind == "restart"]
    if restarts and rnd.random() < 0.1:
        events = list(s.events)
        i = rnd.choice(restarts)
        e = events[i]
        events[i] = replace(
            e, args=(*(a for a in e.args if a[0] != "revisit"), ("revisit", DAY_LONG))
        )
        return replace(s, events=tuple(events))
    return s


def _paths(rnd: random.Random, s: Scenario) -> Scenario:
    """The operator's paths through the resource settings (issue 48 point 3), drawn from a
    stream of their own so the days drawn before them keep their conditions: per-resource
    series off, a top N (``max_resources``), resources filtered in or out, a retention short
    enough that a restart's downtime passes it, deleted resources dropped from the replies
    (quirk ``drop-deleted-resources``, on half the days with resource churn), restarts that
    change them or leave the state
    file damaged (``STATE_DAMAGE``), and host clock steps past ``catch_up_minutes``."""
    d = s.daemon
    if rnd.random() < 0.12:
        d = replace(d, per_resource=False)
    if rnd.random() < 0.15:
        d = replace(d, max_resources=rnd.choice((1, 2)))
    if rnd.random() < 0.1:
        d = replace(d, resources_include=rnd.choice(("[13579]$", "0[12]$")))
    if rnd.random() < 0.1:
        d = replace(d, resources_exclude=rnd.choice(("2$", "0[34]$")))
    if rnd.random() < 0.15:
        d = replace(d, retention_hours=rnd.choice((0.5, 1.0)))
    quirks = s.quirks
    if "resource-churn" in quirks and rnd.random() < 0.5:  # issue 48 failure 3
        quirks = (*quirks, "drop-deleted-resources")
    events = []
    for e in s.events:
        if e.kind == "restart" and rnd.random() < 0.3:
            change = rnd.choice((("per_resource", not d.per_resource), ("max_resources", 1),
                                 ("max_resources", 0), ("revisit", 0)))  # fmt: skip
            e = replace(e, args=(*(a for a in e.args if a[0] != change[0]), change))
        if e.kind == "restart" and rnd.random() < 0.15:
            e = replace(e, args=(*e.args, ("state", rnd.choice(STATE_DAMAGE))))
        elif e.kind == "restart" and e.arg("mode") == "killed" and rnd.random() < 0.3:
            mode = ("mode", "killed_in_save")  # dies between a save's write and its rename
            e = replace(e, args=(mode, *(a for a in e.args if a[0] != "mode")))
        events.append(e)
    span = s.minutes * 60 - QUIET_END_SECONDS
    if span >= 600 and rnd.random() < 0.08:  # a host clock step past catch_up_minutes
        step = rnd.choice((-1, 1)) * (s.catch_up_minutes + 30) * 60
        start = 60 * rnd.randrange(5, span // 60)
        end = min(span, start + 60 * rnd.choice((30, 90)))
        events += [
            Event(start, "clock", (("offset", step),)),
            Event(end, "clock", (("offset", 0),)),
        ]
    return replace(s, daemon=d, quirks=quirks, events=tuple(sorted(events, key=_order)))


def _order(e: Event) -> tuple[int, str]:
    return (e.at, e.kind)


def _events(rnd: random.Random, s: Scenario) -> list[Event]:
    span = s.minutes * 60 - QUIET_END_SECONDS
    if span < 600:
        return []

    def at() -> int:
        return 60 * rnd.randrange(5, span // 60)

    out: list[Event] = []
    for _ in range(rnd.choice((0, 0, 1, 1, 2, 3))):
        kind = rnd.choice(OUTAGE_KINDS)
        minutes = rnd.choice((1, 3, 10, 25, s.catch_up_minutes + 7, 90))
        out.append(Event(at(), "outage", (("kind", kind), ("minutes", minutes))))
    for _ in range(rnd.choice((0, 0, 1, 2, 3))):
        mode = rnd.choice(("clean", "clean", "killed"))
        args: list[tuple[str, Any]] = [("mode", mode), ("down", rnd.choice((0, 1, 4, 15, 70)))]
        if rnd.random() < 0.4:
            args.append(("revisit", rnd.choice(SCHEDULES)))
        if rnd.random() < 0.2:
            args.append(("budget", rnd.choice((0, 3, 4, 6, 8))))
        if rnd.random() < 0.15:
            args.append(("codes", rnd.choice(("codes", "classes"))))
        out.append(Event(at(), "restart", tuple(args)))
    if rnd.random() < 0.25:
        family = rnd.choice(("account_requests", "resource_requests", "resource_responses"))
        start, minutes = at(), rnd.choice((5, 30, 60))
        out.append(Event(start, "exclude", (("family", family),)))
        out.append(Event(min(span, start + minutes * 60), "exclude", (("family", ""),)))
    if rnd.random() < 0.2:
        step = rnd.choice((-900, -300, -60, 60, 300, 600, 1200))
        start, minutes = at(), rnd.choice((10, 30, 120))
        out.append(Event(start, "clock", (("offset", step),)))
        out.append(Event(min(span, start + minutes * 60), "clock", (("offset", 0),)))
    if rnd.random() < 0.1:
        out.append(Event(at(), "drift", (("ppm", rnd.choice((-500, -100, 100, 500))),)))
    if len(s.accounts) > 1 and rnd.random() < 0.3:
        account = rnd.choice(s.accounts)
        start, minutes = at(), rnd.choice((5, 15, 40))
        out.append(Event(start, "unlist", (("account", account),)))
        out.append(Event(min(span, start + minutes * 60), "relist", (("account", account),)))
    if rnd.random() < 0.12:
        start, minutes = at(), rnd.choice((3, 10, 30))
        out.append(Event(start, "unwritable", ()))
        out.append(Event(min(span, start + minutes * 60), "writable", ()))
    if rnd.random() < 0.15:
        out.append(Event(at(), "error_bodies", (("count", rnd.choice((1, 3, 8))),)))
    return out
