"""Every crossing from the event loop to a thread goes through exporter/support/offloop.py:
no ``asyncio.to_thread``, ``run_in_executor`` or executor ``.submit(`` anywhere else in
exporter/ (read from the source: every call, whatever it is called on).

One exception, named here: exposition/pack.py hands each chunk's compression from the thread
that renders (the refresh worker) to the deflate pool and takes the result back there. That
is a hand-off between two threads with no event loop on either side, so offloop's awaited
helpers do not apply; docs/dev/architecture.md (*Threads: two lanes and the deflate pool*)
counts it as the third executor."""

from __future__ import annotations

import ast
from pathlib import Path

import exporter

ROOT = Path(exporter.__file__).parent
CROSSINGS = ("to_thread", "run_in_executor", "submit")
ALLOWED = {
    "support/offloop.py": {"to_thread", "run_in_executor"},  # the one way across
    "exposition/pack.py": {"submit"},  # worker -> deflate pool, no loop involved
}


def crossings(path: Path) -> list[tuple[int, str]]:
    """The calls in ``path`` that cross to a thread: (line, name called)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in CROSSINGS:
            found.append((node.lineno, name))
    return found


def test_threads_are_reached_only_through_offloop() -> None:
    stray = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        allowed = ALLOWED.get(rel, set())
        stray += [f"{rel}:{line} {name}" for line, name in crossings(path) if name not in allowed]
    assert stray == []


def test_the_check_sees_each_way_across(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import asyncio\n"
        "from asyncio import to_thread\n"
        "async def f(loop, pool):\n"
        "    await asyncio.to_thread(print)\n"
        "    await to_thread(print)\n"
        "    await loop.run_in_executor(None, print)\n"
        "    pool.submit(print).result()\n"
        '    """asyncio.to_thread(print) in a docstring is no call"""\n'
    )
    assert [name for _, name in crossings(sample)] == [
        "to_thread",
        "to_thread",
        "run_in_executor",
        "submit",
    ]


def test_the_exceptions_exist() -> None:
    for rel, names in ALLOWED.items():
        assert {name for _, name in crossings(ROOT / rel)} == names, rel
