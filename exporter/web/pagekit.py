"""What the landing page (exporter.web.landing) builds its account sections from: the times it
reads of the self-metrics once, and ``AccountView``, what an area's part of the page reads of
one account (``exporter.areakit.page``: the parts and the HTML pieces they share)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import Gauge

from exporter.areakit.page import ago, e
from exporter.config import Settings
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.summary import AccountSummary

A = TypeVar("A")


def _by_account_area(gauge: Gauge) -> dict[tuple[str, str], float]:
    """(account, area) -> the gauge's value, read once per page (not once per row)."""
    out: dict[tuple[str, str], float] = {}
    for family in gauge.collect():
        for sample in family.samples:
            out[(sample.labels.get("account", ""), sample.labels.get("area", ""))] = sample.value
    return out


@dataclass(frozen=True)
class Times:
    """What the page reads of the self-metrics once: last success and next poll per
    (account, area)."""

    successes: dict[tuple[str, str], float]
    next_polls: dict[tuple[str, str], float]


def read_times(ctx: Context) -> Times:
    return Times(
        _by_account_area(ctx.metrics.last_success), _by_account_area(ctx.metrics.next_poll)
    )


def none(
    known: bool, current: bool, last_ok: float | None, now: float, texts: tuple[str, str]
) -> str:
    """Nothing failing to list: ``all_good`` only while the figures are ``current`` (fresh,
    and the area's last poll succeeded); otherwise when it was last seen healthy, in the
    warning colour, never a stale "all good"."""
    all_good, nothing = texts
    if not known:
        return f'<p class="none">{e(nothing)}</p>'
    if current:
        return f'<p class="none">{e(all_good)}</p>'
    seen = "never" if not last_ok else ago(now - last_ok)
    return f'<p class="none stale" data-state="stale">Last seen healthy {e(seen)}.</p>'


@dataclass(frozen=True)
class AccountView:
    """What an area's part of the page reads of one account (``areakit.page.AccountView``)."""

    ctx: Context
    areas: Areas
    account: str
    index: int  # the account's place on the page (its anchors: ``areakit.page.anchor``)
    summary: AccountSummary
    now: float
    times: Times
    clean: Callable[[str], str]  # platform text masked by structure (``SecretMask.text``)

    @property
    def settings(self) -> Settings:
        return self.ctx.settings

    def area(self, kind: type[A]) -> A:
        return self.areas.get(kind)

    def not_configured(self, area: str) -> str | None:
        return self.ctx.runner.not_configured(area, self.account)

    def nothing_failing(
        self, area: str, known: bool, is_stale: bool, texts: tuple[str, str]
    ) -> str:
        """``none`` for an area's table with no row: current while its figures are fresh and
        its last poll of the account did not fail."""
        current = not is_stale and self.ctx.runner.healthy(area, self.account) is not False
        return none(known, current, self.times.successes.get((self.account, area)), self.now, texts)
