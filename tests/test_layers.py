"""The package layers, read from the source with ``ast`` (no import is executed).

``pipeline/`` is the engine and imports neither ``ops/`` nor ``connectors/``;
``connectors/`` (the edges) may import ``pipeline/`` but not ``ops/``; ``ops/`` may import
both, which is why the ``jobstream`` command is composed there (``ops/command.py``).
Within the engine, its subpackages and top-level modules import each other without a cycle.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "connectors", "ops")

FORBIDDEN = {
    "pipeline": {"ops", "connectors"},
    "connectors": {"ops"},
}


@dataclass(frozen=True)
class Import:
    """One imported module, as written in a module of ours."""

    source: str
    """The importing module, e.g. ``pipeline.jobs.cli``."""
    path: Path
    line: int
    target: str
    """The imported module; for ``from a import b``, ``a.b`` when that is a module."""
    type_checking: bool
    """Inside an ``if TYPE_CHECKING:`` block: needed by the type checker only."""

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.source}) imports {self.target}"


def modules() -> dict[str, Path]:
    """Every module of our packages by dotted name; a package is its ``__init__.py``."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    assert set(PACKAGES) <= found.keys(), f"not every package found under {ROOT}"
    return found


def imports(known: dict[str, Path]) -> Iterator[Import]:
    for source, path in known.items():
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        yield from _walk(ast.parse(path.read_text(), str(path)), source, package, path, known)


def _walk(node: ast.AST, source: str, package: str, path: Path, known: dict[str, Path],
          type_checking: bool = False) -> Iterator[Import]:  # fmt: skip
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk_stmt(stmt, source, package, path, known, True)
            for stmt in child.orelse:
                yield from _walk_stmt(stmt, source, package, path, known, type_checking)
            continue
        yield from _walk_stmt(child, source, package, path, known, type_checking)


def _walk_stmt(node: ast.AST, source: str, package: str, path: Path, known: dict[str, Path],
               type_checking: bool) -> Iterator[Import]:  # fmt: skip
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield Import(source, path, node.lineno, alias.name, type_checking)
    elif isinstance(node, ast.ImportFrom):
        base = _absolute(node, package)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            target = submodule if submodule in known else base
            yield Import(source, path, node.lineno, target, type_checking)
    else:
        yield from _walk(node, source, package, path, known, type_checking)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{parent}.{node.module}" if node.module else parent


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def engine_node(module: str) -> str:
    """``pipeline.jobs.cli`` -> ``pipeline.jobs``; ``pipeline.config`` stays itself."""
    return ".".join(module.split(".")[:2])


def test_no_layer_imports_one_it_may_not_see() -> None:
    """Every import counts here, even one made inside a function or for the type checker."""
    wrong = [
        str(found)
        for found in imports(modules())
        if found.target.split(".")[0] in FORBIDDEN.get(found.source.split(".")[0], set())
    ]
    assert not wrong, "imports across the layers:\n" + "\n".join(wrong)


def test_the_engine_subpackages_import_each_other_without_a_cycle() -> None:
    """Nodes are pipeline's subpackages (``pipeline.jobs``) and top-level modules
    (``pipeline.config``). Imports inside ``if TYPE_CHECKING:`` blocks are left out: they
    never run, so they cannot make an import cycle."""
    graph: dict[str, set[str]] = {}
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for found in imports(modules()):
        if found.type_checking or not found.source.startswith("pipeline"):
            continue
        source, target = engine_node(found.source), engine_node(found.target)
        graph.setdefault(source, set())
        if target.startswith("pipeline.") and target != source:
            graph[source].add(target)
            edges[source, target].append(found)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        # graphlib lists each node before the node that depends on (imports) it
        cycle = error.args[1][::-1]
        steps = [
            f"  {importer} imports {imported}: "
            + "; ".join(str(found) for found in edges[importer, imported])
            for importer, imported in pairwise(cycle)
        ]
        raise AssertionError(
            "import cycle: " + " -> ".join(cycle) + "\n" + "\n".join(steps)
        ) from None
