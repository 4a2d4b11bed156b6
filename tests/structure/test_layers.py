"""Layers point one way: support <- upstream, exposition, config <- areas <- runtime <- web,
docgen, cli. Read from the source (every import, also inside functions and TYPE_CHECKING)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import exporter

ROOT = Path(exporter.__file__).parent
AREAS = ("traffic", "restream", "dvr", "talking_head")
# Lower number, lower layer: a package may import its own layer or the ones below it.
LAYER = {
    "support": 0,
    "upstream": 1,
    "exposition": 1,
    "config": 1,
    "simulator": 1,  # the platform's stand-in: support only
    "areakit": 2,  # what the areas build on: Area, Job, AreaContext, AreaDeclaration
    "remotewrite": 2,  # an output of the traffic area's final minutes, wired by web/daemon.py
    **dict.fromkeys(AREAS, 2),
    "runtime": 3,
    "web": 4,
    "docgen": 4,
    "(top)": 4,  # exporter/cli.py, exporter/__main__.py
}

Edges = dict[str, dict[str, list[str]]]  # package -> imported package -> importing files


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else "(top)"


def _imported(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def package_edges() -> Edges:
    edges: Edges = {}
    for path in sorted(ROOT.rglob("*.py")):
        src = _package(path)
        for name in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            parts = name.split(".")
            if parts[0] != "exporter" or len(parts) < 2 or not (ROOT / parts[1]).is_dir():
                continue
            if parts[1] != src:
                files = edges.setdefault(src, {}).setdefault(parts[1], [])
                files.append(str(path.relative_to(ROOT.parent)))
    return edges


def cycles(edges: Edges) -> list[list[str]]:
    """Each group of packages that reach one another (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_sees_a_cycle_and_leaves_a_chain_alone() -> None:
    loop: Edges = {"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}
    assert cycles(loop) == [["a", "b", "c"]]
    assert cycles({"a": {"b": []}, "b": {"c": []}}) == []


def test_no_import_cycle_between_packages() -> None:
    edges = package_edges()
    assert edges["runtime"]  # the reading found imports at all
    found = cycles(edges)
    where = {
        f"{a} -> {b}": files
        for group in found
        for a in group
        for b, files in edges.get(a, {}).items()
        if b in group
    }
    assert found == [], where


def test_no_package_imports_a_layer_above_it() -> None:
    edges = package_edges()
    assert set(edges) | {b for e in edges.values() for b in e} <= set(LAYER)  # all placed
    upward = {
        f"{a} -> {b}": files
        for a, targets in edges.items()
        for b, files in targets.items()
        if LAYER[b] > LAYER[a]
    }
    assert upward == {}


# Keys of config's own sections that speak of an area, kept where the user writes them:
# each account's DVR streams (a per-account list, read with the account) and the admin
# surface's talking-head read budget (an admin key).
USER_KEYS = {"dvr_streams", "talking_head_reads_per_day"}
AREA_WORD = re.compile(r"(?i)traffic|restream|dvr|talking_?head")


def area_names_in(tree: ast.AST) -> list[str]:
    """Identifiers that name an area (``traffic``, ``check_traffic_budget``, ``DvrSettings``)
    and strings that are one (``"traffic"``); doc strings and comments are text, not code."""
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.arg | ast.keyword) and node.arg:
            names = [node.arg]
        elif isinstance(node, ast.alias):
            names = [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = node.module.split(".")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if node.value in AREAS else []
        found += [n for n in names if n and n not in USER_KEYS and AREA_WORD.search(n)]
    return found


def test_the_area_finder_sees_an_area_in_code_and_not_in_text() -> None:
    code = "\n".join(
        [
            "from exporter.traffic.settings import X",
            "s.restream",
            "f(dvr=1)",
            "class TalkingHeadSettings: ...",
            'k = "talking_head"',
        ]
    )
    found = sorted(area_names_in(ast.parse(code)))
    assert found == ["TalkingHeadSettings", "dvr", "restream", "talking_head", "traffic"]
    text = '"""Traffic and DVR."""\n# restream\nx = "the traffic budget"\na.dvr_streams\n'
    assert area_names_in(ast.parse(text)) == []


def test_config_names_no_area() -> None:
    """Every area's settings, rules, notes and warnings are its declaration's (``AreaSection``),
    handed to config by the registry: config/ reads them without naming one."""
    named = {
        str(path.relative_to(ROOT.parent)): names
        for path in sorted((ROOT / "config").glob("*.py"))
        if (names := area_names_in(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert named == {}


# upstream/ is the transport (request, retries, auth, budget, errors): what it may import of the
# exporter. Each area's replies and endpoints are the area's (``<area>/reply.py``).
TRANSPORT_IMPORTS = {"support", "config"}
# The platform paths of an area, written only in that area's reply.py (and the simulator's
# routes, the platform's side of the wire).
AREA_PATHS = {
    "restream": "/app/restream/",
    "dvr": "/app/dvr-net/",
    "talking_head": "/app/th-api/",
}


def test_upstream_imports_no_area_and_nothing_above_the_transport() -> None:
    imported = package_edges().get("upstream", {})
    assert set(imported) <= TRANSPORT_IMPORTS, {
        package: files for package, files in imported.items() if package not in TRANSPORT_IMPORTS
    }


def test_an_areas_platform_paths_are_written_in_its_reply_module_alone() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if _package(path) == "simulator":
            continue
        source = path.read_text(encoding="utf-8")
        for area, prefix in AREA_PATHS.items():
            if prefix in source:
                found.setdefault(area, []).append(str(path.relative_to(ROOT)))
    assert found == {area: [f"{area}/reply.py"] for area in AREA_PATHS}


def _areas_named(path: Path) -> set[str]:
    """The areas a module names in code (``area_names_in``), each as its registry name."""
    found = {
        name.lower().replace("talkinghead", "talking_head")
        for name in area_names_in(ast.parse(path.read_text(encoding="utf-8")))
    }
    return {area for area in AREAS if any(area in name for name in found)}


# The two modules that may list the areas: the registry, and the composition root (which
# builds the daemon and the demo's config). The simulator is the platform's stand-in and
# serves every area's endpoints as the platform does; the area packages name themselves.
LISTS_AREAS = {"exporter/runtime/registry.py", "exporter/web/daemon.py"}
NOT_LISTING = ("simulator", *AREAS)


def test_the_areas_are_listed_in_the_registry_and_the_composition_root_only() -> None:
    listing = {
        str(path.relative_to(ROOT.parent))
        for path in sorted(ROOT.rglob("*.py"))
        if _package(path) not in NOT_LISTING and _areas_named(path) == set(AREAS)
    }
    assert listing == LISTS_AREAS


def test_the_area_list_finder_sees_a_list() -> None:
    assert _areas_named(ROOT / "runtime" / "registry.py") == set(AREAS)
    assert _areas_named(ROOT / "traffic" / "charts.py") <= {"traffic"}


# The web modules outside the admin package that may import it: the app that mounts it, the
# composition root (which hands the reload route the admin API's failure throttle) and the
# state-file check (the admin read budget's file is one of them). The reload route and the
# landing page, which links the OpenAPI document, take what they share with the admin API
# (bearer roles, the failure throttle, masking) from web/ itself.
IMPORTS_ADMIN = {"exporter/web/app.py", "exporter/web/daemon.py", "exporter/web/statepaths.py"}


def test_only_the_app_and_the_root_import_the_admin_package() -> None:
    importing = {
        str(path.relative_to(ROOT.parent))
        for path in sorted((ROOT / "web").rglob("*.py"))
        if path.relative_to(ROOT / "web").parts[0] != "admin"
        if any(
            name == "exporter.web.admin" or name.startswith("exporter.web.admin.")
            for name in _imported(ast.parse(path.read_text(encoding="utf-8")))
        )
    }
    assert importing == IMPORTS_ADMIN
    assert "exporter/web/lifecycle.py" not in importing
    assert "exporter/web/landing.py" not in importing
