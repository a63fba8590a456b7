"""The python backend's shape, read from its source with ``ast``: a template worth copying.

- No import cycle among ``modelplatform_python`` modules, counting imports
  inside functions too (a lazy import must not hide a cycle).
- No module imports another module's private (``_``) name.
- From core, only the top-level package ``modelplatform`` is imported.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import modelplatform_python

PACKAGE = Path(modelplatform_python.__file__).parent
#: The top-level module Triton python models import; it ships with the plugin.
PB_UTILS = PACKAGE.parent / "triton_python_backend_utils.py"


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (the package itself included)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str) -> Iterator[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import anywhere in the file."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield _absolute(node, name, is_package), [a.name for a in node.names]


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    base = parts[: len(parts) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from . import x`` counts x)."""
    known = modules(package)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for target, names in imports(path, name):
            submodules = {f"{target}.{n}" for n in names} & known.keys()
            graph[name] |= submodules or ({target} & known.keys())
        graph[name].discard(name)
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


def test_no_import_cycle_among_the_backend_modules():
    graph = import_graph(PACKAGE)
    assert "modelplatform_python.backend" in graph and len(graph) > 5  # the walk found them
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_lazy_import(tmp_path):
    """The check itself: a cycle closed by an import inside a function is found."""
    package = tmp_path / "sample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "backend.py").write_text("from .processes import start\n")
    (package / "processes.py").write_text(textwrap.dedent("""
        def start():
            from .child import serve
            return serve
    """))
    (package / "child.py").write_text("from . import backend\n")
    assert cycles(import_graph(package)) == [
        ["sample.backend", "sample.processes", "sample.child", "sample.backend"]
    ]


def test_no_module_imports_another_modules_private_name():
    private = [
        f"{name} takes {taken} from {target}"
        for name, path in modules(PACKAGE).items()
        for target, names in imports(path, name)
        for taken in names
        if taken.startswith("_") and not taken.startswith("__")
    ]
    assert private == []


@pytest.mark.parametrize(
    "path", [*modules(PACKAGE).values(), PB_UTILS], ids=lambda p: p.name
)
def test_imports_from_core_only_the_modelplatform_package(path):
    name = "triton_python_backend_utils" if path == PB_UTILS else None
    dotted = name or next(n for n, p in modules(PACKAGE).items() if p == path)
    reached = {target for target, _ in imports(path, dotted)}
    into_core = sorted(t for t in reached if t.startswith("modelplatform."))
    assert into_core == []
