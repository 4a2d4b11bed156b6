"""Tests mirror the package: every module of exporter/ has a test file of its own, or a reason
why not in ``UNTESTED``; every folder of tests/ is a package's or a kind's.

A module ``exporter/<package>/<module>.py`` is tested by ``tests/<package>/test_<module>.py``
or ``tests/<package>/test_<module>_<aspect>.py`` (``exporter/<module>.py`` by
``tests/test_<module>*.py``); a test file counts for the longest module name it starts with
(``test_history_file.py`` tests ``history_file.py``, not ``history.py``). A package's
``__init__.py`` that only re-exports (docstring, imports, ``__all__``) needs neither.
"""

from __future__ import annotations

import ast
from pathlib import Path

import exporter

PACKAGE = Path(exporter.__file__).resolve().parent
ROOT = PACKAGE.parent
TESTS = ROOT / "tests"
HERE = "tests/structure/test_test_files.py"

# Top-level folders of tests/ that hold a kind of test, not one package's (docs/dev/testing.md).
KINDS = {
    "system",  # real tools: prometheus, promtool, chromium
    "reliability",  # child processes, the fault matrix, soak
    "lifecycle",  # the daemon as a process: flags, reload, readiness, doc examples
    "golden",  # the exposition byte for byte
    "deploy",  # deploy/ files, the lock, the image
    "release",  # the sdist and wheel
    "simulation",  # the deterministic simulation of the whole daemon
    "bench",  # bench/
    "structure",  # the layout itself: layers, this listing, the make lanes
    "rig",  # the fake upstreams (not tests)
}

# Modules without a test file of their own, and why. Keyed by path from the repository root.
UNTESTED: dict[str, str] = {
    "exporter/__init__.py": "the version string only; tests/release/test_version.py",
    "exporter/__main__.py": (
        "__main__ shim for `python -m exporter` (runs cli.main); tests/lifecycle"
    ),
    "exporter/areakit/declaration.py": (
        "declaration type only; a whole area built from it: tests/areakit/test_area_toy.py"
    ),
    "exporter/areakit/metrics.py": (
        "protocol only (what the areas record); SelfMetrics implements it"
    ),
    "exporter/areakit/summary.py": (
        "the landing summary's types; tests/areakit/test_area_toy.py, tests/web/test_landing.py"
    ),
    "exporter/config/flags.py": (
        "command-line flags: tests/lifecycle/test_flags_and_startup.py runs them"
    ),
    "exporter/config/needed.py": (
        "which keys check-config asks for: tests/config/test_loader.py, "
        "tests/lifecycle/test_check_config_report.py"
    ),
    "exporter/config/report.py": (
        "check-config's report: tests/config/test_secretfiles.py, "
        "tests/remotewrite/test_settings.py, tests/lifecycle/test_check_config_report.py"
    ),
    "exporter/docgen/__main__.py": (
        "__main__ shim for `python -m exporter.docgen`; `--check` runs in "
        "tests/docgen/test_generate.py"
    ),
    "exporter/docgen/catalogue.py": (
        "the one list of families; tests/config/test_settings_metrics.py, "
        "tests/docgen/test_generate.py"
    ),
    "exporter/docgen/metricsdoc.py": (
        "docs/metrics.md generation: tests/docgen/test_generate.py (up to date), "
        "tests/areakit/test_area_toy.py"
    ),
    "exporter/docgen/selection.py": (
        "check-config's include/exclude warnings: tests/config/test_settings_metrics.py"
    ),
    "exporter/docgen/seriescount.py": (
        "series counts in docs/metrics.md: tests/docgen/test_generate.py (generated docs up to "
        "date)"
    ),
    "exporter/dvr/area.py": (
        "the area's wiring: tests/runtime/test_service_reshard.py, tests/golden"
    ),
    "exporter/dvr/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/dvr/families.py": (
        "family declarations only; values in tests/dvr/test_poller.py, names in tests/golden"
    ),
    "exporter/dvr/reply.py": (
        "its parser: tests/upstream/test_models.py (every parser against any JSON); its "
        "endpoints: tests/upstream/test_endpoint.py; its reader: "
        "tests/dvr/test_against_simulator.py"
    ),
    "exporter/dvr/settings.py": "settings section: tests/config/test_loader.py",
    "exporter/dvr/summary.py": "landing summary: tests/web/test_landing.py",
    "exporter/dvr/transform.py": "dvr_fragment: tests/dvr/test_poller.py (beside the poller)",
    "exporter/exposition/formats.py": "OpenMetrics rendering: tests/golden/test_openmetrics.py",
    "exporter/exposition/model.py": (
        "fragment and family types: tests/exposition/test_store.py, test_deflate.py"
    ),
    "exporter/exposition/samples.py": "compact samples: tests/exposition/test_pack.py",
    "exporter/remotewrite/build.py": "the write request built: tests/remotewrite/test_writer.py",
    "exporter/remotewrite/metrics.py": (
        "protocol only (the writer's self-metrics); SelfMetrics implements it"
    ),
    "exporter/restream/area.py": (
        "the area's wiring: tests/runtime/test_service_reshard.py, tests/golden"
    ),
    "exporter/restream/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/restream/families.py": (
        "family declarations only; values in tests/restream/test_transform.py"
    ),
    "exporter/restream/identity.py": (
        "target labels and key fingerprints: tests/restream/test_transform.py, "
        "tests/web/admin/test_masking.py"
    ),
    "exporter/restream/settings.py": "settings section: tests/config/test_loader.py",
    "exporter/restream/summary.py": "landing summary: tests/web/test_landing.py",
    "exporter/runtime/aps.py": (
        "APScheduler pieces: tests/runtime/test_scheduler.py, test_scheduler_loop.py"
    ),
    "exporter/runtime/areas.py": (
        "built by every daemon test: tests/runtime/test_service_*.py, tests/web/admin/conftest.py"
    ),
    "exporter/runtime/context.py": (
        "a value holder built by every daemon test (tests/web/admin/conftest.py)"
    ),
    "exporter/runtime/cost.py": (
        "request cost: tests/bench/test_request_cost.py, tests/areakit/test_area_toy.py"
    ),
    "exporter/runtime/registry.py": (
        "the list of areas: tests/structure/test_layers.py, tests/areakit/test_area_toy.py"
    ),
    "exporter/runtime/reload.py": (
        "reload: tests/runtime/test_presence_restart_accounts.py, "
        "tests/lifecycle/test_reconfigure.py"
    ),
    "exporter/runtime/selfmetrics.py": "self-metrics: tests/runtime/test_selftext.py, tests/golden",
    "exporter/runtime/summary.py": "landing summary: tests/web/test_landing.py",
    "exporter/simulator/cli_args.py": (
        "`simulate`/`demo` flags: tests/simulator/test_config.py, tests/lifecycle/test_make_demo.py"
    ),
    "exporter/simulator/dataset.py": (
        "the starting catalogue, read back by every tests/simulator test"
    ),
    "exporter/simulator/hashing.py": (
        "seeded numbers behind every simulated figure; tests/simulator/test_routes_traffic.py"
    ),
    "exporter/simulator/http_common.py": (
        "shared by the route modules; tests/simulator/test_faults.py"
    ),
    "exporter/simulator/middleware.py": (
        "faults and token checks: tests/simulator/test_faults.py, test_auth.py"
    ),
    "exporter/simulator/ratelimit.py": (
        "the simulated limit: tests/simulator/test_quirks.py, tests/upstream/test_budget.py"
    ),
    "exporter/simulator/requests_log.py": (
        "the request log tests assert on: tests/simulator/test_faults.py"
    ),
    "exporter/simulator/restream_validate.py": (
        "restream write validation: tests/simulator/test_restream.py"
    ),
    "exporter/simulator/revision.py": "quirk revise-after-settle: tests/simulator/test_quirks.py",
    "exporter/simulator/routes_auth.py": "token endpoint: tests/simulator/test_auth.py",
    "exporter/simulator/routes_control.py": (
        "/_sim control surface: tests/simulator/test_faults.py, tests/reliability"
    ),
    "exporter/simulator/routes_dvr.py": "DVR routes: tests/simulator/test_dvr.py",
    "exporter/simulator/routes_restream.py": "restream routes: tests/simulator/test_restream.py",
    "exporter/simulator/routes_talking_head.py": (
        "talking-head routes: tests/simulator/test_talking_head.py"
    ),
    "exporter/simulator/server.py": (
        "the simulator on a socket: tests/reliability/simproc.py, tests/system"
    ),
    "exporter/simulator/simulator.py": "the simulator itself, behind every tests/simulator test",
    "exporter/simulator/talking_head_catalog.py": (
        "catalogue data: tests/simulator/test_talking_head.py"
    ),
    "exporter/simulator/traffic_model.py": (
        "traffic figures: tests/simulator/test_routes_traffic.py, tests/simulation"
    ),
    "exporter/simulator/traffic_window.py": (
        "window sums: tests/simulator/test_routes_traffic.py, tests/support/test_platform_fields.py"
    ),
    "exporter/support/buildinfo.py": (
        "build info: tests/release/test_version.py, "
        "tests/lifecycle/test_build_and_process_metrics.py"
    ),
    "exporter/support/clock.py": (
        "Clock and FakeClock, used by nearly every test; SystemClock in "
        "tests/web/test_daemon_process_clock.py"
    ),
    "exporter/support/hoststep.py": "host clock steps: tests/traffic/test_host_clock.py",
    "exporter/support/malloc.py": "allocator settings: tests/runtime/test_tuning.py",
    "exporter/support/secrets.py": (
        "secret query names: tests/web/admin/test_masking.py, "
        "tests/restream/test_against_simulator.py"
    ),
    "exporter/support/urls.py": (
        "URL masking: tests/support/test_logs.py, tests/web/admin/test_masking_url_property.py"
    ),
    "exporter/support/writable.py": "writability checks: tests/lifecycle/test_state_path_usable.py",
    "exporter/talking_head/area.py": (
        "the area's wiring: tests/runtime/test_service_reshard.py, tests/golden"
    ),
    "exporter/talking_head/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/talking_head/families.py": (
        "family declarations only; values in tests/talking_head/test_poller.py"
    ),
    "exporter/talking_head/settings.py": (
        "settings section: tests/config/test_loader.py, "
        "tests/web/admin/test_readbudget_talking_head.py"
    ),
    "exporter/talking_head/summary.py": "landing summary: tests/web/test_landing.py",
    "exporter/talking_head/tasks.py": (
        "the task tracker, through the admin API: tests/web/admin/test_task_tracker.py"
    ),
    "exporter/talking_head/transform.py": (
        "configurations_fragment: tests/talking_head/test_poller.py (beside the poller)"
    ),
    "exporter/traffic/accounts.py": (
        "the poller's accounts across replicas, through TrafficPoller: "
        "tests/traffic/test_shard_move.py, tests/runtime/test_presence_restart_accounts.py"
    ),
    "exporter/traffic/area.py": (
        "the area's wiring: tests/runtime/test_service_reshard.py, test_presence_*.py"
    ),
    "exporter/traffic/auditor.py": "the audit's reads: tests/traffic/test_audit.py",
    "exporter/traffic/cycle.py": (
        "one poll's budget answers, through TrafficPoller: tests/traffic/test_limits.py, "
        "test_settle_pieces.py"
    ),
    "exporter/traffic/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/traffic/exposure.py": (
        "first exposure of counters: tests/traffic/test_first_exposure.py"
    ),
    "exporter/traffic/history.py": "the charts' ring: tests/web/test_charts.py",
    "exporter/traffic/history_file.py": (
        "the charts' file: tests/lifecycle/test_charts_after_restart.py"
    ),
    "exporter/traffic/persist.py": (
        "build, state file and publish, through TrafficPoller: tests/traffic/test_state_save.py, "
        "test_poller_state.py"
    ),
    "exporter/traffic/policy.py": (
        "window sizing, give-up and the run due, through TrafficPoller: "
        "tests/traffic/test_settle_ages.py, test_settle_edges.py, test_slow.py"
    ),
    "exporter/traffic/settings.py": "settings section: tests/config/test_loader.py",
    "exporter/traffic/skew.py": (
        "platform clock beliefs: tests/traffic/test_echo.py, test_settle_ages.py"
    ),
    "exporter/traffic/steps.py": (
        "worker steps in the poll's log context: tests/traffic/test_worker.py and every "
        "tests/traffic test that reads log lines (tests/traffic/logcapture.py)"
    ),
    "exporter/traffic/summary.py": "landing summary: tests/web/test_landing.py, test_charts.py",
    "exporter/upstream/errors.py": (
        "error classification: tests/upstream/test_models.py, test_client_shapes_errors.py"
    ),
    "exporter/upstream/fields.py": (
        "the typed field readers of every parser: tests/upstream/test_models.py (any JSON "
        "parses or is invalid_body)"
    ),
    "exporter/upstream/metrics.py": (
        "protocol only (what the client records); SelfMetrics implements it"
    ),
    "exporter/upstream/operations.py": (
        "the admin pass-through: tests/upstream/test_client.py (operations pass through "
        "exactly), tests/upstream/test_endpoint.py, tests/web/admin/test_routes.py"
    ),
    "exporter/web/admin/__init__.py": "the admin app's setup: every tests/web/admin test builds it",
    "exporter/web/admin/body.py": (
        "the JSON body reader of the admin gate: tests/web/admin/test_limits.py, test_validation.py"
    ),
    "exporter/web/admin/core.py": (
        "the admin call (upstream, pass-through, masking): tests/web/admin/test_routes.py, "
        "test_limits.py, test_audit.py"
    ),
    "exporter/web/admin/handlers.py": (
        "each operation: tests/web/admin/test_routes.py, test_against_simulator.py"
    ),
    "exporter/web/admin/schemas.py": (
        "request schemas: tests/web/admin/test_validation.py, test_contract.py"
    ),
    "exporter/web/admin/validation_th.py": (
        "talking-head rules: tests/web/admin/test_validation.py, "
        "tests/simulator/test_talking_head_validate.py"
    ),
    "exporter/web/auth.py": (
        "bearer roles of the admin API and the reload route: tests/web/admin/test_auth.py, "
        "tests/lifecycle (reload)"
    ),
    "exporter/web/landing_parts/dvr.py": (
        "the DVR part of the landing page: tests/web/test_landing.py"
    ),
    "exporter/web/landing_parts/restream.py": (
        "the restream part of the landing page: tests/web/test_landing.py"
    ),
    "exporter/web/landing_parts/talking_head.py": (
        "the talking-head part of the landing page: tests/web/test_landing.py"
    ),
    "exporter/web/landing_parts/traffic.py": (
        "the traffic part of the landing page: tests/web/test_landing.py, test_charts.py"
    ),
    "exporter/web/masking.py": (
        "secret masking of admin replies and the landing page: tests/web/admin/test_masking.py, "
        "test_masking_edges.py, test_masking_url_property.py"
    ),
    "exporter/web/pagekit.py": "the landing page's shared HTML pieces: tests/web/test_landing.py",
    "exporter/web/problems.py": (
        "the landing page's problem list: tests/web/test_landing.py, test_landing_fold.py"
    ),
    "exporter/web/ratelimit.py": (
        "the admin limits and the failure throttle: tests/web/admin/test_ratelimit.py, "
        "test_throttle.py, test_auth.py"
    ),
    "exporter/web/readiness.py": (
        "/readyz: tests/lifecycle/test_readiness.py, tests/runtime/test_retry_poll.py"
    ),
    "exporter/web/statepaths.py": (
        "state paths checked at start: tests/lifecycle/test_state_path_usable.py"
    ),
    "exporter/web/tlsconfig.py": (
        "TLS settings: tests/web/test_webconfig_toolkit.py, test_serving_listener.py"
    ),
    "exporter/web/yamlvalues.py": "typed YAML reads: tests/web/test_webconfig_toolkit.py",
}


def _only_reexports(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Assign) and [
            t.id for t in node.targets if isinstance(t, ast.Name)
        ] == ["__all__"]:
            continue
        return False
    return True


def _modules() -> dict[str, Path]:
    """Modules that need a test file or a reason, by path from the root."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        if path.name == "__init__.py" and _only_reexports(path):
            continue
        found[path.relative_to(ROOT).as_posix()] = path
    return found


def _test_folder(module: str) -> Path:
    """tests/<package path> for exporter/<package path>/<module>.py."""
    parts = Path(module).parts[1:-1]  # without "exporter" and the file name
    return TESTS.joinpath(*parts)


def _stem(module: str) -> str:
    name = Path(module).stem
    return "init" if name == "__init__" else name


def _tested() -> dict[str, list[str]]:
    """Each module's own test files (paths from the root)."""
    modules = _modules()
    by_folder: dict[Path, list[str]] = {}
    for module in modules:
        by_folder.setdefault(_test_folder(module), []).append(module)
    tested: dict[str, list[str]] = {m: [] for m in modules}
    for folder, members in by_folder.items():
        for test in sorted(folder.glob("test_*.py")):
            name = test.stem.removeprefix("test_")
            owners = [m for m in members if name == _stem(m) or name.startswith(_stem(m) + "_")]
            if owners:
                owner = max(owners, key=lambda m: len(_stem(m)))
                tested[owner].append(test.relative_to(ROOT).as_posix())
    return tested


def test_every_module_has_a_test_file_or_a_reason() -> None:
    missing = [m for m, tests in _tested().items() if not tests and m not in UNTESTED]
    advice = [
        f"{m} has no test file of its own: add {_test_folder(m).relative_to(ROOT).as_posix()}"
        f"/test_{_stem(m)}.py (or test_{_stem(m)}_<aspect>.py), or add to UNTESTED in "
        f'{HERE}:\n    "{m}": "<why it needs none, e.g. declaration only, covered by '
        'tests/golden>",'
        for m in missing
    ]
    assert missing == [], "\n".join(advice)


def test_every_reason_is_still_needed() -> None:
    tested = _tested()
    stale = [
        f'remove "{m}" from UNTESTED in {HERE}: '
        + (
            "the module no longer exists (or only re-exports)"
            if m not in tested
            else f"{', '.join(tested[m])} tests it now"
        )
        for m in UNTESTED
        if m not in tested or tested[m]
    ]
    assert stale == [], "\n".join(stale)
    assert [m for m, why in UNTESTED.items() if not why.strip()] == []


def test_every_test_folder_is_a_package_or_a_kind() -> None:
    packages = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*") if p.is_dir()} - {
        "__pycache__"
    }
    strays = []
    for folder in sorted(TESTS.rglob("*")):
        if not folder.is_dir() or "__pycache__" in folder.parts:
            continue
        rel = folder.relative_to(TESTS)
        if rel.parts[0] in KINDS or not list(folder.glob("*.py")):
            continue  # a kind's folder, or data (tests/web/toolkit)
        if rel.as_posix() not in packages:
            strays.append(
                f"tests/{rel.as_posix()}: no exporter/{rel.as_posix()} package; move its tests"
                f" to tests/<package>/ or name the kind in KINDS in {HERE}"
            )
        if not (folder / "__init__.py").exists():
            strays.append(f"tests/{rel.as_posix()}: add an __init__.py (basenames repeat)")
    assert strays == [], "\n".join(strays)
