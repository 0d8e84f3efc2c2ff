"""The package layers, read from the source with ``ast`` (no import is executed).

``pipeline/`` is the engine and imports neither ``ops/`` nor ``connectors/``;
``connectors/`` (the edges) may import ``pipeline/`` but not ``ops/``; ``ops/`` may import
both, which is why the ``jobstream`` command is composed there (``ops/command.py``).
The three install as ``jobstream._pipeline``, ``jobstream._connectors`` and ``jobstream._ops``
(docs/adr/0005-one-import-name.md); the public face, ``jobstream`` and its modules beside
them in jobstream/, imports them, so neither the engine nor the edges import it back.
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
ENGINE = "jobstream._pipeline"
PUBLIC = "jobstream"

FORBIDDEN = {
    ENGINE: {"jobstream._ops", "jobstream._connectors", PUBLIC},
    "jobstream._connectors": {"jobstream._ops", PUBLIC},
}


def layer(module: str) -> str:
    """``jobstream._pipeline.jobs.cli`` -> ``jobstream._pipeline``; a public module
    (``jobstream``, ``jobstream.records``) -> ``jobstream``; another package -> its name."""
    top, _, rest = module.partition(".")
    if top != PUBLIC:
        return top
    inner = rest.split(".")[0]
    return f"{PUBLIC}.{inner}" if inner.startswith("_") else PUBLIC


@dataclass(frozen=True)
class Import:
    """One imported module, as written in a module of ours."""

    source: str
    """The importing module, e.g. ``jobstream._pipeline.jobs.cli``."""
    path: Path
    line: int
    target: str
    """The imported module; for ``from a import b``, ``a.b`` when that is a module."""
    type_checking: bool
    """Inside an ``if TYPE_CHECKING:`` block: needed by the type checker only."""

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.source}) imports {self.target}"


def modules() -> dict[str, Path]:
    """Every module of our packages by dotted name (as installed, ``jobstream._pipeline.x``);
    a package is its ``__init__.py``."""
    found = {}
    folders = [(ROOT / package, (PUBLIC, f"_{package}")) for package in PACKAGES]
    for folder, prefix in folders:
        for path in sorted(folder.rglob("*.py")):
            parts = prefix + path.relative_to(folder).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in sorted((ROOT / PUBLIC).glob("*.py")):  # the public face; its links are above
        found[PUBLIC if path.stem == "__init__" else f"{PUBLIC}.{path.stem}"] = path
    expected = {PUBLIC, *(f"{PUBLIC}._{package}" for package in PACKAGES)}
    assert expected <= found.keys(), f"not every package found under {ROOT}"
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
    """``jobstream._pipeline.jobs.cli`` -> ``jobstream._pipeline.jobs``;
    ``jobstream._pipeline.config`` stays itself."""
    return ".".join(module.split(".")[:3])


def test_no_layer_imports_one_it_may_not_see() -> None:
    """Every import counts here, even one made inside a function or for the type checker."""
    wrong = [
        str(found)
        for found in imports(modules())
        if layer(found.target) in FORBIDDEN.get(layer(found.source), set())
    ]
    assert not wrong, "imports across the layers:\n" + "\n".join(wrong)


def test_the_engine_subpackages_import_each_other_without_a_cycle() -> None:
    """Nodes are pipeline's subpackages (``jobstream._pipeline.jobs``) and top-level modules
    (``jobstream._pipeline.config``). Imports inside ``if TYPE_CHECKING:`` blocks are left out: they
    never run, so they cannot make an import cycle."""
    graph: dict[str, set[str]] = {}
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for found in imports(modules()):
        if found.type_checking or layer(found.source) != ENGINE:
            continue
        source, target = engine_node(found.source), engine_node(found.target)
        graph.setdefault(source, set())
        if layer(target) == ENGINE and target != source:
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
