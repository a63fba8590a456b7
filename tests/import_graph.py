"""Import graphs of a package read with ``ast``, and the cycles in them (structure tests)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Edge:
    """One import of a package module by another, where it is written."""

    path: Path
    line: int
    source: str
    target: str


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (the package itself included)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str, module_level: bool = False) -> Iterator[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import in the file.

    ``module_level``: only the imports that run when the module is imported
    (not inside functions, not under ``if TYPE_CHECKING:``).
    """
    for _, target, names in _located_imports(path, name, module_level):
        yield target, names


def _located_imports(path: Path, name: str, module_level: bool) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every import in the file."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    for node in _module_level(tree) if module_level else ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, _absolute(node, name, is_package), [a.name for a in node.names]


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    base = parts[: len(parts) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def import_edges(package: Path, module_level: bool = False) -> list[Edge]:
    """Every import of one of the package's modules by another (``from . import x`` counts x).

    Without ``module_level``: every import, those inside functions and under
    ``if TYPE_CHECKING:`` included.
    """
    known = modules(package)
    found = []
    for name, path in known.items():
        for line, target, names in _located_imports(path, name, module_level):
            submodules = {f"{target}.{n}" for n in names} & known.keys()
            for imported in sorted(submodules or ({target} & known.keys())):
                if imported != name:
                    found.append(Edge(path, line, name, imported))
    return found


def import_graph(package: Path, module_level: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from . import x`` counts x)."""
    graph: dict[str, set[str]] = {name: set() for name in modules(package)}
    for edge in import_edges(package, module_level):
        graph[edge.source].add(edge.target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import cycle once, as the path that closes it (depth-first search)."""
    found: list[list[str]] = []
    finished: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph[node]):
            if target in path:
                found.append(path[path.index(target) :] + [target])
            elif target not in finished:
                visit(target, [*path, target])
        finished.add(node)

    for start in sorted(graph):
        if start not in finished:
            visit(start, [start])
    return found


def _module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """The statements that run on import: the body, and if/try blocks but TYPE_CHECKING ones."""
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        elif isinstance(node, (ast.If, ast.Try)):
            pending.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            pending.extend(h for handler in getattr(node, "handlers", []) for h in handler.body)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node
