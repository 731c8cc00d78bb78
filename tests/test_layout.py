"""The package's shape: no import cycles, no private name used outside its module, and no
SQL outside the store.

The layering itself (each stage importing only those below it) is import-linter's contract
in pyproject.toml, run by ``make lint``; these are the rules it does not state."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parent.parent / "agenteval_cli"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan's algorithm), those of two or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def test_no_import_cycles():
    # function-level imports count: a cycle hidden inside a function is still a cycle
    assert _cycles(grimp.build_graph("agenteval_cli")) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "cyclic_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclic_pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclic_pkg import a\n")
    (pkg / "c.py").write_text("from cyclic_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyclic_pkg")) == [["cyclic_pkg.a", "cyclic_pkg.b"]]


def private_imports(root: Path, package: str) -> list[str]:
    """``from <package>... import _name`` anywhere under ``root``: a module's private name
    used by another module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)}: {node.module}.{alias.name}")
    return found


def test_no_private_names_across_modules():
    assert private_imports(PACKAGE, "agenteval_cli") == []


def test_private_import_finder(tmp_path):
    (tmp_path / "m.py").write_text("from agenteval_cli.store.results import _null, dumps\n")
    assert private_imports(tmp_path, "agenteval_cli") == ["m.py: agenteval_cli.store.results._null"]


SQL_CALLS = frozenset({"execute", "executemany", "executescript"})


def sql_outside_store(root: Path) -> list[str]:
    """What under ``root``, outside its ``store/`` folder, works the SQLite file itself (#24):
    an import of sqlite3, the store's connection (a ``.db`` attribute, ``store_db``), or a
    ``.execute``-like call given SQL text (a literal or f-string)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root)
        if where.parts[0] == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            line = f"{where}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{line} import {a.name}" for a in node.names if _is_sqlite(a.name)]
            elif isinstance(node, ast.ImportFrom):
                if _is_sqlite(node.module or ""):
                    found.append(f"{line} from {node.module} import")
                found += [f"{line} import {a.name}" for a in node.names if a.name == "store_db"]
            elif isinstance(node, ast.Attribute) and node.attr == "db":
                found.append(f"{line} .db")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS
                and node.args
                and isinstance(node.args[0], ast.Constant | ast.JoinedStr | ast.BinOp)
            ):
                found.append(f"{line} .{node.func.attr}(SQL)")
    return sorted(found, key=lambda text: (text.split(":")[0], int(text.split(":")[1].split()[0])))


def _is_sqlite(module: str) -> bool:
    return module == "sqlite3" or module.startswith("sqlite3.")


def test_sql_lives_in_the_store():
    assert sql_outside_store(PACKAGE) == []


def test_the_sql_finder_finds_sql_outside_the_store(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "db.py").write_text("import sqlite3\ndb.execute('SELECT 1')\n")
    (tmp_path / "report.py").write_text(
        "import os, sqlite3\n"
        "from sqlite3 import IntegrityError\n"
        "from agenteval_cli.store.langsmith_state import store_db\n"
        "rows = store.db\n"
        "conn.execute(f'DELETE FROM {table}')\n"
        "conn.executemany('INSERT INTO t VALUES (?)', rows)\n"
        "experiment.execute(prepared, store)\n"
    )
    assert sql_outside_store(tmp_path) == [
        "report.py:1 import sqlite3",
        "report.py:2 from sqlite3 import",
        "report.py:3 import store_db",
        "report.py:4 .db",
        "report.py:5 .execute(SQL)",
        "report.py:6 .executemany(SQL)",
    ]


# what only the API reaches: the store, the runner and what it calls, the read model, LangSmith
BEHIND_THE_API = ("store", "execution", "results", "langsmith", "otel", "targets", "trace")


def test_the_cli_reaches_the_store_runner_read_model_and_langsmith_only_through_the_api():
    # every command is one call into agenteval_cli.api: no module of the CLI imports what
    # the API keeps behind it, not even for a type hint
    graph = grimp.build_graph("agenteval_cli")
    found = [
        (module, imported)
        for module in sorted(graph.find_descendants("agenteval_cli.cli"))
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[:2] in (["agenteval_cli", n] for n in BEHIND_THE_API)
    ]
    assert found == []
