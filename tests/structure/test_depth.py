"""Deep, not wide: in the traffic area and the upstream transport no function runs past
``MAX_FUNCTION_LINES``, and ``TrafficPoller`` keeps no method that only hands its arguments on
to a part it holds (callers call the part that does the work)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELD = ("exporter/traffic", "exporter/upstream")
MAX_FUNCTION_LINES = 60
Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST) -> list[Function]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """Each function of ``source`` longer than ``limit`` lines (its docstring included)."""
    found = []
    for f in _functions(ast.parse(source)):
        lines = (f.end_lineno or f.lineno) - f.lineno + 1
        if lines > limit:
            found.append((f.name, lines))
    return found


def _chain_root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Call):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return node


def _on_a_part(node: ast.expr) -> bool:
    """``node`` reads ``self.<part>.<something>`` (a part the object holds, then into it)."""
    if not isinstance(node, ast.Attribute):
        return False
    inner = node.value
    while isinstance(inner, ast.Call):
        inner = inner.func
    return (
        isinstance(inner, ast.Attribute)
        and isinstance(_chain_root(inner), ast.Name)
        and getattr(_chain_root(inner), "id", "") == "self"
    )


def _forwards(call: ast.Call, params: list[str]) -> bool:
    """The call passes on exactly the method's own parameters, in order, and nothing else."""
    passed = [a.id for a in call.args if isinstance(a, ast.Name)]
    passed += [k.value.id for k in call.keywords if isinstance(k.value, ast.Name)]
    return len(passed) == len(call.args) + len(call.keywords) and passed == params


def pass_throughs(source: str, cls: str) -> list[str]:
    """The methods of class ``cls`` whose body (past the docstring) is one statement that
    only hands the method's parameters on to a part the object holds (``self.x.y(args)``),
    or reads an attribute of one (``self.x.y``, a property)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ClassDef) and node.name == cls):
            continue
        for f in node.body:
            if not isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            body = f.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring
            if len(body) != 1 or not isinstance(body[0], ast.Return | ast.Expr):
                continue
            value = body[0].value
            if isinstance(value, ast.Await):
                value = value.value
            params = [a.arg for a in f.args.args[1:]]
            calls = isinstance(value, ast.Call) and _on_a_part(value.func)
            if calls and _forwards(value, params):  # type: ignore[arg-type]
                found.append(f.name)
            if isinstance(value, ast.Attribute) and not params and _on_a_part(value):
                found.append(f.name)  # a property
    return found


def test_the_finders_see_what_they_look_for() -> None:
    forwarding = '''
class Poller:
    def serve(self, accounts):
        """Doc."""
        self._accounts.serve(accounts)

    async def republish(self):
        return await self.publisher.republish()

    @property
    def written(self):
        return self.publisher.file.on_disk

    def ledger(self, account):
        return self._accounts.state(account).ledger

    def wake_at(self, account):
        return self._wake.pop(account, None)

    async def poll(self, account):
        async with self.lock:
            await self.cycle.run(account)
'''
    assert pass_throughs(forwarding, "Poller") == ["serve", "republish", "written"]
    body = "\n".join(f"    x = {i}" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f", MAX_FUNCTION_LINES + 1)]
    assert long_functions(f"def f():\n{body}\n", limit=MAX_FUNCTION_LINES + 1) == []


def test_no_function_of_the_traffic_area_or_the_transport_runs_past_the_limit() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {name} ({lines} lines)"
        for folder in HELD
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name, lines in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert found == [], f"split these into functions of at most {MAX_FUNCTION_LINES} lines"


def test_the_traffic_poller_keeps_no_pass_through() -> None:
    source = (ROOT / "exporter/traffic/poller.py").read_text(encoding="utf-8")
    assert "class TrafficPoller" in source
    assert pass_throughs(source, "TrafficPoller") == [], "callers call the part that does it"
