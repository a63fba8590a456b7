"""The python backend's shape, read from its source with ``ast``: a template worth copying.

- No import cycle among ``modelplatform_python`` modules, counting imports
  inside functions too (a lazy import must not hide a cycle).
- No module imports another module's private (``_``) name.
- From core, only the top-level package ``modelplatform`` and its documented sub-APIs are imported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import modelplatform_python
from tests.core.test_import_rules import SUB_APIS

from ...import_graph import cycles, import_graph, imports, modules

PACKAGE = Path(modelplatform_python.__file__).parent
#: The top-level module Triton python models import; it ships with the plugin.
PB_UTILS = PACKAGE.parent / "triton_python_backend_utils.py"


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
    (package / "processes.py").write_text(
        textwrap.dedent("""
        def start():
            from .child import serve
            return serve
    """)
    )
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


@pytest.mark.parametrize("path", [*modules(PACKAGE).values(), PB_UTILS], ids=lambda p: p.name)
def test_imports_from_core_only_the_modelplatform_package(path):
    name = "triton_python_backend_utils" if path == PB_UTILS else None
    dotted = name or next(n for n, p in modules(PACKAGE).items() if p == path)
    reached = {target for target, _ in imports(path, dotted)}
    into_core = sorted(t for t in reached if t.startswith("modelplatform.") and t not in SUB_APIS)
    assert into_core == []
