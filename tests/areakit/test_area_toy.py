"""An area added the way docs/dev/architecture.md says (a package's declaration and one line in
the registry) shows up everywhere the areas are listed: its settings section in the parsed
config, check-config and docs/configuration.md; its rule over another section, notes and
warnings in the loader and check-config; its families in docs/metrics.md; its request cost;
its landing summary, its part of the landing page and what the page's first block says is
wrong of it; the self-metrics and ``/metrics`` of a running daemon. A part that kept a list of
its own would leave the toy out, and its test here fails."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from exporter.areakit import (
    AccountView,
    AreaContext,
    AreaCost,
    AreaDeclaration,
    Finding,
    Job,
    LandingPart,
    QuietArea,
)
from exporter.areakit.summary import published
from exporter.cli import main
from exporter.config import AreaSection, ConfigError, Settings, load_config, parse_config
from exporter.config.rules import Rule
from exporter.docgen.generate import configuration_md
from exporter.docgen.metricsdoc import metrics_md
from exporter.exposition import MetricSpec, Store, StoreKey
from exporter.runtime import registry
from exporter.runtime.cost import cost_lines
from exporter.runtime.reload import changed_keys, live_settings
from exporter.runtime.scheduler import EXACT
from exporter.runtime.summary import account_summary
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.app import CTX
from exporter.web.daemon import SERVICE
from exporter.web.landing import render_landing
from tests.rig.daemon import running
from tests.rig.schedule import run_due

ACCOUNT = "demo-media"
WIDGETS = MetricSpec(
    "cdnvideo_toy_widgets",
    "gauge",
    "Widgets of the account (a toy area of the tests).",
    ("account",),
    source="/toy/widgets",
)


@dataclass(frozen=True)
class ToySettings:
    widgets: int = field(default=3, metadata={"doc": "How many widgets each account shows."})


class ToyArea(QuietArea):
    """One job a minute that publishes ``toy.widgets`` widgets for the account."""

    name = "toy"
    title = "Toy"

    def __init__(self, ctx: AreaContext) -> None:
        self._ctx = ctx

    def enabled(self, settings: Settings) -> bool:
        return True

    def jobs(self, account: str) -> list[Job]:
        async def poll() -> None:
            b = self._ctx.store.selection.builder()
            b.add(WIDGETS, (account,), TOY_SECTION.of(self._ctx.settings).widgets)
            self._ctx.store.publish(StoreKey(self.name, account), b.build(), max_age=300.0)

        return [Job(self.name, account, 60.0, poll)]

    def forget(self, account: str) -> None:
        self._ctx.store.drop_account(account)


def check_widgets(key: str, toy: ToySettings, settings: Settings) -> None:
    """The toy's rule over another section: a widget each needs a request slot."""
    slots = settings.upstream.max_concurrency
    if toy.widgets > slots:
        raise ConfigError(f"upstream.max_concurrency: {slots} is below {key}.widgets {toy.widgets}")


TOY_SECTION = AreaSection(
    "toy",
    ToySettings,
    "Toy widgets (a toy area of the tests).",
    rule=Rule("at most `upstream.max_concurrency` widgets", check_widgets),
    notes=lambda s: [f"toy.widgets: {TOY_SECTION.of(s).widgets} per account"],
    warnings=lambda s: ["toy.widgets: more than 4"] if TOY_SECTION.of(s).widgets > 4 else [],
)


@dataclass(frozen=True)
class ToySummary:
    """What the landing page would show of the toy: the widgets it published."""

    widgets: float | None


def toy_summary(store: Store, account: str) -> ToySummary:
    return ToySummary(published(store, StoreKey("toy", account)).value(WIDGETS, account=account))


def toy_facts(view: AccountView) -> str:
    widgets = view.summary.of(ToySummary).widgets
    return f'<dt>Toy widgets</dt><dd class="widgets">{widgets:g}</dd>'


def toy_findings(view: AccountView) -> tuple[Finding, ...]:
    widgets = view.summary.of(ToySummary).widgets
    return (Finding("toy", f"{widgets:g} toy widgets spinning"),) if widgets else ()


TOY_PART = LandingPart(facts=toy_facts, findings=toy_findings, style=".widgets{color:#8250df}")


TOY = AreaDeclaration(
    name="toy",
    title=ToyArea.title,
    metrics_title="Toy widgets",
    specs=(WIDGETS,),
    build=ToyArea,
    cost=lambda settings: AreaCost("toy", 1.0, how="one a minute per account"),
    settings=TOY_SECTION,
    summary=toy_summary,
    landing=TOY_PART,
)


@pytest.fixture
def toy() -> Iterator[None]:
    """The registry with the toy area's one line added."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "REGISTRY", (*registry.REGISTRY, TOY))
        yield


def config(**sections: object) -> Settings:
    raw = {"upstream": {"token": "t"}, "accounts": [ACCOUNT], **sections}
    return parse_config(raw, env={}, areas=registry.settings_sections())


def test_the_config_reads_the_toy_section_with_its_defaults_and_refuses_a_bad_key(
    toy: None,
) -> None:
    assert TOY_SECTION.of(config()) == ToySettings()
    assert config().areas["toy"] == ToySettings()  # read from the config, not a default
    assert TOY_SECTION.of(config(toy={"widgets": 5})) == ToySettings(widgets=5)
    with pytest.raises(ConfigError) as bad:
        config(toy={"widget": 5})
    assert bad.value.problems == ("toy.widget: unknown key (did you mean 'widgets'?)",)
    with pytest.raises(ConfigError) as bad:
        config(toy={"widgets": "many"})
    assert [p.partition(":")[0] for p in bad.value.problems] == ["toy.widgets"]


def test_check_config_shows_the_toy_section_and_its_request_cost(
    toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yml"
    path.write_text(f"upstream: {{token: t}}\naccounts: [{ACCOUNT}]\ntoy: {{widgets: 5}}\n")
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\ntoy:\n  widgets: 5\n" in out
    assert "#   toy              1.00  (one a minute per account)\n" in out


def test_the_toy_areas_rule_over_another_section_refuses_a_config_at_the_line_of_the_key(
    toy: None, tmp_path: Path
) -> None:
    path = tmp_path / "config.yml"
    path.write_text("upstream:\n  token: t\n  max_concurrency: 2\ntoy: {widgets: 3}\n")
    with pytest.raises(ConfigError) as bad:
        load_config(path, env={})
    assert bad.value.problems == ("upstream.max_concurrency: 2 is below toy.widgets 3 (line 3)",)
    assert TOY_SECTION.of(config(upstream={"token": "t", "max_concurrency": 3})).widgets == 3


def test_check_config_prints_the_toy_areas_notes_and_warnings(
    toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yml"
    path.write_text(f"upstream: {{token: t}}\naccounts: [{ACCOUNT}]\ntoy: {{widgets: 5}}\n")
    assert main(["check-config", "--config", str(path), "--verbose"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "note: toy.widgets: 5 per account" in err
    assert "warning: toy.widgets: more than 4" in err


def test_the_configuration_reference_has_the_toy_section(toy: None) -> None:
    text = configuration_md()
    section = text.split("### `toy`\n", 1)[1].split("\n## ", 1)[0]
    assert "Toy widgets (a toy area of the tests)." in section
    assert "Accepted: at most `upstream.max_concurrency` widgets." in section
    assert "| `toy.widgets` | integer | `3` | How many widgets each account shows. |" in section


def test_the_metric_reference_has_the_toy_areas_section_and_family(toy: None) -> None:
    text = metrics_md()
    section = text.split("## Toy widgets\n", 1)[1].split("\n## ", 1)[0]
    assert "| `cdnvideo_toy_widgets` | gauge | `account` | - | `/toy/widgets` |" in section
    assert "- `area`: `traffic`, `restream`, `dvr`, `talking_head`, `toy`, `auth`." in text
    assert text.index("## Talking-head video") < text.index("## Toy widgets")
    assert text.index("## Toy widgets") < text.index("## The exporter itself")


def test_check_config_prices_the_toy_area(toy: None) -> None:
    settings = parse_config({"upstream": {"token": "t"}, "accounts": [ACCOUNT]}, env={})
    lines = cost_lines(settings)
    assert "  toy              1.00  (one a minute per account)" in lines
    assert lines[-1].startswith("  total")


@pytest.fixture
async def daemon(toy: None) -> AsyncIterator[tuple[web.Application, str]]:
    """The daemon with the toy area, on a FakeClock, against the simulator; every job of the
    account run once by the scheduler."""
    clock = FakeClock()
    sim = Simulator(SimConfig(accounts=(ACCOUNT,), resources_per_account=1), clock)
    sim_runner = await serve(sim)
    settings = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "accounts": [ACCOUNT],
            "log": {"level": "error", "format": "json"},
            "toy": {"widgets": 5},
        },
        env={},
        areas=registry.settings_sections(),
    )
    try:
        async with running(settings, clock, timing=EXACT) as started:
            await run_due(started.service.scheduler)
            await started.ctx.store.render()
            yield started.app, started.url
    finally:
        await sim_runner.cleanup()


async def test_a_running_daemon_schedules_the_toy_area_and_serves_its_family(
    daemon: tuple[web.Application, str],
) -> None:
    app, url = daemon
    assert [a.name for a in app[SERVICE].areas] == [
        "traffic",
        "restream",
        "dvr",
        "talking_head",
        "toy",
    ]
    assert ("toy", ACCOUNT, "") in app[SERVICE].scheduler.jobs()
    async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as resp:
        body = await resp.text()
    assert resp.status == 200
    lines = body.splitlines()
    assert f'cdnvideo_toy_widgets{{account="{ACCOUNT}"}} 5' in lines
    assert f'cdnvideo_up{{account="{ACCOUNT}",area="toy"}} 1.0' in lines
    # the self-metrics expose the registry's areas at 0 from the start
    assert 'cdnvideo_upstream_polls_postponed_total{area="toy"} 0.0' in lines
    # the landing page's figures: the toy's summary, after the four areas'
    summary = account_summary(app[CTX].store, ACCOUNT)
    assert list(summary.areas)[-1] == "toy"
    assert summary.of(ToySummary) == ToySummary(widgets=5.0)


async def test_the_landing_page_shows_the_toy_areas_part_and_what_it_finds_wrong(
    daemon: tuple[web.Application, str],
) -> None:
    app, _ = daemon
    page = render_landing(app[CTX], app[SERVICE].areas)
    wrong = page.split('<section class="summary"', 1)[1].split("</section>", 1)[0]
    assert '<a href="#account-0-toy">5 toy widgets spinning</a>' in wrong
    section = page.split(f'data-account="{ACCOUNT}"', 1)[1].split("</section>", 1)[0]
    rows = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert '<td data-label="Area">Toy</td>' in rows  # its health row
    facts = section.split("<dl>", 1)[1].split("</dl>", 1)[0]
    assert facts.endswith('<dt>Toy widgets</dt><dd class="widgets">5</dd>')  # after the four
    assert ".widgets{color:#8250df}</style>" in page


def test_a_reload_names_the_toy_key_it_leaves_for_a_restart(toy: None) -> None:
    old, new = config(), config(toy={"widgets": 7})
    assert changed_keys(old, new) == ["toy.widgets"]
    assert TOY_SECTION.of(live_settings(old, new)) == ToySettings()  # the toy has no live key


def test_a_config_read_before_any_area_is_declared_says_so_instead_of_unknown_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from exporter.config import settings as config_settings

    monkeypatch.setattr(config_settings, "_declared", [])
    raw = {"upstream": {"base_url": "http://127.0.0.1:1", "token": "t"}, "traffic": {}}
    with pytest.raises(RuntimeError, match=r"no areas declared: import exporter\.runtime"):
        parse_config(raw, env={})
    # with the registry's sections passed explicitly the same config is read
    assert parse_config(raw, env={}, areas=registry.settings_sections()).areas.keys() >= {"traffic"}
