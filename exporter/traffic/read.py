"""One traffic read processed in one step on the worker thread, as fastly-exporter's
``Process(response)``: each answer decoded, checked (envelope, echo), its ``Date`` read, parsed
and summed per half, then counted (a first read) or settled (a settle read), unless its
replies moved the platform's clock. The event loop only sends the requests."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog

from exporter.areakit.metrics import AreaMetrics
from exporter.support import jsonpieces
from exporter.support.clock import Clock
from exporter.traffic.accounts import Accounts
from exporter.traffic.echo import check_echo, stating
from exporter.traffic.final import FinalMinutes, tell
from exporter.traffic.ledger import OTHER, AccountLedger, Reread, Terms
from exporter.traffic.parse import (
    ResourceRow,
    Row,
    Values,
    merge,
    parse_resources,
    parse_totals,
    row_reader,
)
from exporter.traffic.policy import cap, refusal
from exporter.traffic.policy import stages as policy_stages
from exporter.traffic.reply import Answer, MetricsReply, TrafficSource, parse_metrics
from exporter.traffic.runs import Run
from exporter.traffic.select import ResourceSelector, fold
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.skew import Clocks
from exporter.traffic.steps import untied, untied_task
from exporter.traffic.transform import Latest
from exporter.traffic.windows import MINUTE, Window, settle_cap_minutes
from exporter.upstream.budget import Postponed
from exporter.upstream.client import decode_body
from exporter.upstream.errors import UpstreamError, is_error_body

log = structlog.get_logger("exporter.traffic")

# A rejected upstream value is logged at most once per field in this many seconds.
REJECTED_LOG_SECONDS = 3600.0

Asked = list[tuple[str, Window]]  # (half, window) of each request, in the order sent
# What each request got, taken over by the step (None: taken).
Replies = list[Answer | UpstreamError | None]


@dataclass(frozen=True)
class Planned:
    """The clocks a read was planned on: the host's time, the platform's ready time and how
    often the platform's clock was doubted; replies that moved them doubt the read."""

    now: float
    ready: float
    doubts: int


@dataclass(frozen=True)
class Sent:
    """A read as the loop sent it: its window, the halves asked, each request's (half,
    window) in the order sent, and what each got (taken over by the read step)."""

    window: Window
    halves: Sequence[str]
    asked: Asked
    replies: Replies


async def send(client: TrafficSource, account: str, w: Window, halves: Sequence[str]) -> Sent:
    """The requests of ``halves`` of ``w`` at once; what each got, as received (the body
    still bytes when large): read by one worker step, which takes the replies over."""
    asked: Asked = [(half, w) for half in halves]
    calls = [
        untied_task(client.traffic(account, w.start, w.end, half == "resources"))
        for half, _ in asked
    ]  # the client's lines name no account
    got = await asyncio.gather(*calls, return_exceptions=True)
    del calls  # the tasks hold their replies too: the step is to be their only holder
    replies: Replies = []
    for reply in got:
        if isinstance(reply, BaseException) and not isinstance(reply, UpstreamError):
            raise reply  # a bug or a cancellation, not the platform
        replies.append(reply)
    del got
    return Sent(w, halves, asked, replies)


def postponement(exc: UpstreamError) -> bool:
    """Not the platform failing the window: our budget, or its rate limit (429, a 420 or 200
    body about a rate limit, with or without Retry-After). The read waits; never a failure."""
    return isinstance(exc, Postponed) or exc.rate_limited


def final(run: Run, led: AccountLedger, stages: tuple[int, ...]) -> bool:
    """``run`` left the ledger after its last settle age (not joined into another run)."""
    return run not in led.pending and run.next_age(stages) <= run.settled


def body(answer: Answer, each: Callable[[int, Any], Any] | None = None) -> Any:
    """The answer's body decoded (unless the transport did) and checked as the transport
    checks the replies it decodes (on the worker). ``each``: what each element of its
    ``data`` becomes as it is decoded (``jsonpieces.loads_each``); an error body is decoded
    again as it is, so the error holds the body as received."""
    reply = answer.reply
    if reply.decoded:
        return reply.data
    if each is None:
        data = decode_body(reply.body)
    else:
        data = decode_body(reply.body, lambda raw: jsonpieces.loads_each(raw, "data", each))
        if is_error_body(data):
            data = decode_body(reply.body)
    answer.told(data)
    assert answer.client is not None  # only the transport leaves a body undecoded
    return answer.client.checked("traffic", replace(reply, data=data))


def decoded(answer: Answer, per_resource: bool) -> MetricsReply:
    """The answer's body decoded, checked and parsed, the decoded objects taken over."""
    return parse_metrics(body(answer), per_resource)


def totals_of(answer: Answer, account: str, w: Window) -> Values:
    """The account totals an answer gives for ``w`` (the audit's read; raises UpstreamError)."""
    reply = decoded(answer, False)
    check_echo(reply, account, w)
    return parse_totals(stating(reply, w)).counts


@dataclass
class Read:
    """What one read's step did: the first error of the halves not answered in full, whether
    the replies doubted the clock the read was planned on (then nothing was counted), and for
    a settle read whether a half was settled, the counters rose, and the run's read at this
    age is complete."""

    error: UpstreamError | None
    doubted: bool = False
    read: bool = False
    increased: bool = False
    complete: bool = False


Got = dict[str, Any]  # the halves answered: ``totals`` a Row, ``resources`` rows by id


class Reader:
    """The step's parts: the clocks the replies are read against, the resource filter, the
    ledgers' owner, and the output told each run of minutes once it is final
    (``final_minutes``: remote write; while set, runs are kept to one minute, so what it is
    told is the platform's own figure for each minute)."""

    def __init__(
        self,
        accounts: Accounts,
        clocks: Clocks,
        select: ResourceSelector,
        settings: TrafficSettings,
        metrics: AreaMetrics,
        clock: Clock,
    ) -> None:
        self._accounts = accounts
        self._clocks = clocks
        self._select = select
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self.final_minutes: FinalMinutes | None = None
        self._rejected_logged: dict[str, float] = {}

    # -- the steps -------------------------------------------------------------------------
    def _doubted(self, planned: Planned) -> bool:
        """Whether the replies just read moved the clocks the read was planned on."""
        clocks = self._clocks
        return clocks.doubts != planned.doubts or clocks.ready_time(planned.now) != planned.ready

    def first(self, account: str, led: AccountLedger, sent: Sent, planned: Planned) -> Read:
        """A first read of ``sent.window``: both halves counted, or nothing (the first
        error)."""
        got, error = self.halves(account, sent.replies, sent.asked, sent.halves)
        if error is not None:
            return Read(error)
        now = planned.now
        led.answered_at = now
        if self._doubted(planned):
            return Read(None, doubted=True)  # the replies moved the clock it was planned on
        self._count(account, led, sent.window, got["totals"], got.get("resources", {}), now)
        return Read(None, read=True)

    def settle(
        self, account: str, led: AccountLedger, run: Run, sent: Sent, planned: Planned, cap: int
    ) -> Read:
        """A settle read of ``run`` (piece ``sent.window``): the halves answered are settled,
        unless the replies doubted the clock (then the read stays owed)."""
        got, error = self.halves(account, sent.replies, sent.asked, sent.halves)
        read = Read(error)
        w, now = sent.window, planned.now
        if got and self._doubted(planned):
            read.doubted = True
            if error is None:
                return read
            got = {}
        if got:
            led.answered_at = now
            read.read = True
            stages = policy_stages(self._settings, led)
            reread = Reread(got.get("totals"), got.get("resources"))
            per_resource, unlisted = self._settings.per_resource, self._select.lists_all
            terms = Terms(stages, cap, self._select.folds, per_resource, unlisted)
            final_minutes = self.final_minutes
            led.shaped = final_minutes is not None
            read.increased, read.complete = led.settle_piece(run, w, reread, terms)
            if final_minutes is not None and final(run, led, stages):
                tell(final_minutes, account, run)
        return read

    # -- decoding, checking, parsing ---------------------------------------------------------
    def halves(
        self,
        account: str,
        replies: Replies,
        asked: Asked,
        halves: Sequence[str],
    ) -> tuple[Got, UpstreamError | None]:
        """The halves answered in full, summed over their windows, and the first error of
        the others (a refusal before the rest). Each answer is taken out of ``replies`` as it
        is read, so its body (bytes, then decoded objects) is freed before the next one is
        decoded."""
        errors: list[UpstreamError] = []
        failed: set[str] = set()
        good: dict[str, list[tuple[MetricsReply, float | None]]] = {h: [] for h in halves}
        for i, (half, w) in enumerate(asked):
            answer, replies[i] = replies[i], None
            try:
                if isinstance(answer, UpstreamError):
                    raise answer  # the request's own error (the transport's, or a status)
                assert answer is not None  # each taken once
                per_resource = half == "resources"
                # a large body's rows parsed as they are decoded, each row's dict dropped at once
                skew, data = answer.skew_seconds, body(answer, row_reader(per_resource))
                del answer  # its bytes freed before the rows are parsed
                reply = parse_metrics(data, per_resource)  # takes the objects over
                del data
                check_echo(reply, account, w)
            except UpstreamError as problem:
                errors.append(problem)
                failed.add(half)
                continue
            good[half].append((stating(reply, w), skew))
            del reply
        for h in halves:
            if h not in failed:
                for _, skew in good[h]:  # the platform's clock: no account's line
                    untied().run(self._clocks.read, skew)
        # An empty per-resource list beside totals above 0 is an answer: the platform drops
        # resources from its replies once deleted (the account's only one too). Nothing is
        # lost either way: resources listed again at a settle read get what they show, and a
        # run's last read counts what no resource lists under __other__ (``AccountLedger``).
        got = self._parse([h for h in halves if h not in failed], good)
        good.clear()
        error: UpstreamError | None = None
        if errors:
            refused = [e for e in errors if refusal(e)]
            real = [e for e in errors if not postponement(e)]
            error = (refused or real or errors)[0]
        return got, error

    def _parse(
        self, halves: Sequence[str], good: dict[str, list[tuple[MetricsReply, float | None]]]
    ) -> Got:
        """Each half's replies parsed and summed over its windows."""
        rejected: list[str] = []
        out: Got = {}
        if "totals" in halves:
            out["totals"] = merge(parse_totals(r, rejected) for r, _ in good["totals"])
        if "resources" in halves:
            rows: dict[str, ResourceRow] = {}
            for reply, _ in good["resources"]:
                for rid, r in self._select.filter(parse_resources(reply, rejected)).items():
                    seen = rows.get(rid)
                    rows[rid] = (
                        r
                        if seen is None
                        else ResourceRow(r.id, r.name, r.cname, merge((seen.row, r.row)))
                    )
            out["resources"] = rows
        if rejected:
            self._report_rejected(rejected)
        return out

    def _report_rejected(self, fields: list[str]) -> None:
        """Count each dropped value; log each field at most once an hour."""
        now = self._clock.time()
        for name in fields:
            self._metrics.values_rejected.labels("traffic", name).inc()
        for name in sorted(set(fields)):
            if now < self._rejected_logged.get(name, -math.inf) + REJECTED_LOG_SECONDS:
                continue
            self._rejected_logged[name] = now
            log.warning(
                "upstream_value_rejected",
                area="traffic",
                field=name,
                values=fields.count(name),
                action="dropped alone; the rest of the window is counted",
            )

    # -- counting ------------------------------------------------------------------------------
    def _count(
        self,
        account: str,
        led: AccountLedger,
        w: Window,
        totals: Row,
        rows: dict[str, ResourceRow],
        now: float,
    ) -> None:
        sel = self._select.select(rows.values())
        stages = self._settings.settle_stages
        final_minutes = self.final_minutes
        folded = frozenset(r.id for r in sel.folded)
        settle = None
        if stages:
            longest = settle_cap_minutes(stages[0], not led.long_refused)
            settle = (stages[0] * MINUTE, cap(longest, final_minutes is not None))
        # Read at, and settled after, on the clock that decides what is ready: a settle read
        # never comes before its age on the platform's clock, whichever way ours steps.
        unlisted = self._settings.per_resource and self._select.lists_all
        rest = led.count_first_read(
            w, totals, rows.values(), sel.named_ids, self._clocks.ready_time(now), settle, unlisted
        )
        if final_minutes is not None and not stages:  # no settle reads: final at once
            resources = {r.id: r.row.counts for r in rows.values()}
            if rest is not None:  # what no resource lists, counted under __other__
                resources[OTHER] = rest
            run = Run(w.start, w.end, now, totals.counts, resources, folded)
            tell(final_minutes, account, run)
        st = self._accounts.state(account)
        st.latest = Latest(w, totals, sel.named, fold(sel.folded) if sel.folded else None)
        newly = folded - st.folded
        if newly:
            self._metrics.series_dropped.inc(len(newly))
        st.folded = folded
