"""Tests mirror the package: every module of exporter/ is named by a test, or has a reason
why not in ``UNTESTED``; every folder of tests/ is a package's or a kind's.

A module is named by a test when:

- it has a test file of its own: ``exporter/<package>/<module>.py`` is tested by
  ``tests/<package>/test_<module>.py`` or ``tests/<package>/test_<module>_<aspect>.py``
  (``exporter/<module>.py`` by ``tests/test_<module>*.py``); a test file counts for the longest
  module name it starts with (``test_history_file.py`` tests ``history_file.py``, not
  ``history.py``);
- or a test file (``tests/**/test_*.py``) imports it by its name (``from exporter.x.y import
  ...``, ``from exporter.x import y``, ``import exporter.x.y``): the test that proves it says so
  where it uses it.

A module that holds nothing to run needs neither: a package's ``__init__.py`` that only
re-exports (docstring, imports, ``__all__``), a ``__main__.py`` shim, and a module whose
functions have no body (declarations and protocols: classes, constants, ``...``). ``UNTESTED``
keeps the rest, each with the test that reaches it through another module.
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

# Modules no test names (the rule in the module docstring), each with the test that reaches it
# through another module. Keyed by path from the repository root.
UNTESTED: dict[str, str] = {
    "exporter/areakit/page.py": (
        "the landing parts' view and HTML pieces: tests/web/test_landing.py, tests/areakit"
    ),
    "exporter/dvr/landing.py": "the DVR part of the landing page: tests/web/test_landing.py",
    "exporter/restream/landing.py": (
        "the restream part of the landing page: tests/web/test_landing.py"
    ),
    "exporter/talking_head/landing.py": (
        "the talking-head part of the landing page: tests/web/test_landing.py"
    ),
    "exporter/traffic/landing.py": (
        "the traffic part of the landing page: tests/web/test_landing.py"
    ),
    "exporter/areakit/declaration.py": (
        "declaration type only; a whole area built from it: tests/areakit/test_area_toy.py"
    ),
    "exporter/config/needed.py": (
        "which keys check-config asks for: tests/config/test_loader.py, "
        "tests/lifecycle/test_check_config_report.py"
    ),
    "exporter/docgen/seriescount.py": (
        "series counts in docs/metrics.md: tests/docgen/test_generate.py (generated docs up to "
        "date)"
    ),
    "exporter/dvr/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/dvr/transform.py": "dvr_fragment: tests/dvr/test_poller.py (beside the poller)",
    "exporter/restream/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/runtime/aps.py": (
        "APScheduler pieces: tests/runtime/test_scheduler.py, test_scheduler_loop.py"
    ),
    "exporter/runtime/areas.py": (
        "built by every daemon test: tests/runtime/test_service_*.py, tests/web/admin/conftest.py"
    ),
    "exporter/simulator/cli_args.py": (
        "`simulate`/`demo` flags: tests/simulator/test_config.py, tests/lifecycle/test_make_demo.py"
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
    "exporter/support/malloc.py": "allocator settings: tests/runtime/test_tuning.py",
    "exporter/support/writable.py": "writability checks: tests/lifecycle/test_state_path_usable.py",
    "exporter/talking_head/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/talking_head/transform.py": (
        "configurations_fragment: tests/talking_head/test_poller.py (beside the poller)"
    ),
    "exporter/traffic/cycle.py": (
        "one poll's budget answers, through TrafficPoller: tests/traffic/test_limits.py, "
        "test_settle_pieces.py"
    ),
    "exporter/traffic/declaration.py": (
        "declaration only, covered by tests/golden and tests/areakit/test_area_toy.py"
    ),
    "exporter/upstream/fields.py": (
        "the typed field readers of every parser: tests/upstream/test_models.py (any JSON "
        "parses or is invalid_body)"
    ),
    "exporter/upstream/operations.py": (
        "the admin pass-through: tests/upstream/test_client.py (operations pass through "
        "exactly), tests/upstream/test_endpoint.py, tests/web/admin/test_routes.py"
    ),
    "exporter/web/admin/handlers.py": (
        "each operation: tests/web/admin/test_routes.py, test_against_simulator.py"
    ),
    "exporter/web/pagekit.py": "the landing page's shared HTML pieces: tests/web/test_landing.py",
    "exporter/web/problems.py": (
        "the landing page's problem list: tests/web/test_landing.py, test_landing_fold.py"
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


def _imported(path: Path) -> set[str]:
    """The dotted names ``path`` imports (absolute imports: a module and each name from it)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _named_by_tests() -> dict[str, str]:
    """Dotted module name -> the first test file (path from the root) that imports it."""
    named: dict[str, str] = {}
    for test in sorted(TESTS.rglob("test_*.py")):
        for name in sorted(_imported(test)):
            named.setdefault(name, test.relative_to(ROOT).as_posix())
    return named


def _dotted(module: str) -> str:
    parts = Path(module).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _nothing_to_run(module: str) -> bool:
    """A ``__main__`` shim, or no function with a body (declarations, protocols)."""
    if Path(module).name == "__main__.py":
        return True

    def bodiless(body: list[ast.stmt]) -> bool:
        return all(
            isinstance(stmt, ast.Pass)
            or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
            for stmt in body
        )

    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    return all(
        bodiless(node.body)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )


def _by_the_rule() -> dict[str, str]:
    """Each module -> how the rule (module docstring) counts it as tested, or "" when not."""
    named = _named_by_tests()
    how: dict[str, str] = {}
    for module, tests in _tested().items():
        if tests:
            how[module] = f"{', '.join(tests)} tests it"
        elif _dotted(module) in named:
            how[module] = f"{named[_dotted(module)]} imports it"
        elif _nothing_to_run(module):
            how[module] = "it holds nothing to run"
        else:
            how[module] = ""
    return how


def test_every_module_is_named_by_a_test_or_has_a_reason() -> None:
    missing = [m for m, how in _by_the_rule().items() if not how and m not in UNTESTED]
    advice = [
        f"{m} is named by no test: add {_test_folder(m).relative_to(ROOT).as_posix()}"
        f"/test_{_stem(m)}.py (or test_{_stem(m)}_<aspect>.py), import it in the test that "
        f'proves it, or add to UNTESTED in {HERE}:\n    "{m}": "<the test that reaches it '
        'through another module>",'
        for m in missing
    ]
    assert missing == [], "\n".join(advice)


def test_every_reason_is_still_needed() -> None:
    how = _by_the_rule()
    stale = [
        f'remove "{m}" from UNTESTED in {HERE}: '
        + how.get(m, "the module no longer exists (or only re-exports)")
        for m in UNTESTED
        if m not in how or how[m]
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
