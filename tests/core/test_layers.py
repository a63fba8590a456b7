"""The core's layers, bottom to top: a module imports only from its own layer and those below.

Every import counts: those that run on import, those inside functions, and
those under ``if TYPE_CHECKING:`` (a type a module names is a dependency of
its meaning, even when Python never loads it). Inside one layer imports are
free; the module-level cycle test (test_core_structure.py) keeps them acyclic.

The layers are the packages of ``core/modelplatform/`` (docs/architecture.md
draws them). Where the top-level modules sit, and why:

- ``_version`` and ``protos`` (the generated ``model_config_pb2``) are the
  bottom: they import nothing of the core, and both base (config_reader
  parses config.pbtxt with the protos) and composition (``--version``, the
  server metadata) read them.
- ``hookspecs`` sits above dataplane and below the front ends: the specs speak
  only of what plugins register (codecs, backends, repository sources, route
  and service declarations, the ServerContext), all from the layers below.
  Composition builds the plugin manager from it; no front end needs it, and
  placing it under them keeps the reference manual free of any transport.
- ``modelplatform`` (``__init__``, the plugin-author API), its documented
  sub-APIs ``datatypes``, ``statistics`` and ``batching``, ``testing`` (the in-process
  server for plugin authors) and ``__main__`` (``python -m modelplatform``)
  are the top: they re-export or start what lies below, and
  nothing in the core imports them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT

from ..import_graph import Edge, import_edges, modules

CORE = ROOT / "core" / "modelplatform"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: Bottom to top. A name stands for the module and everything under it, except the
#: root package, which stands for its ``__init__`` alone.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("modelplatform._version", "modelplatform.protos"),
    ("modelplatform.base",),
    ("modelplatform.models",),
    ("modelplatform.dataplane",),
    ("modelplatform.hookspecs",),
    ("modelplatform.frontends",),
    ("modelplatform.composition",),
    (
        "modelplatform",
        "modelplatform.testing",
        "modelplatform.__main__",
        "modelplatform.datatypes",
        "modelplatform.statistics",
        "modelplatform.batching",
    ),
)
#: The most modules and packages side by side at core/modelplatform/'s top level.
MOST_AT_TOP = 15


def layer_of(module: str, layers: tuple[tuple[str, ...], ...], root: str) -> int | None:
    """The index of ``module``'s layer, or None when no layer names it."""
    for index, names in enumerate(layers):
        for name in names:
            if module == name or (name != root and module.startswith(f"{name}.")):
                return index
    return None


def upward_imports(package: Path, layers: tuple[tuple[str, ...], ...]) -> list[Edge]:
    """Every import, counted as this module's docstring says, from a layer to one above it."""
    root = package.name
    found = []
    for edge in import_edges(package):
        source, target = layer_of(edge.source, layers, root), layer_of(edge.target, layers, root)
        if source is not None and target is not None and target > source:  # unplaced: see unplaced()
            found.append(edge)
    return found


def unplaced(package: Path, layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """The package's modules no layer names (a new top-level module must be placed)."""
    return [name for name in modules(package) if layer_of(name, layers, package.name) is None]


def described(edges: list[Edge], shown_from: Path) -> list[str]:
    """``file:line module -> module`` for each edge."""
    return [f"{e.path.relative_to(shown_from)}:{e.line} {e.source} -> {e.target}" for e in edges]


def test_every_core_module_has_a_layer():
    assert unplaced(CORE, LAYERS) == []


def test_no_core_module_imports_from_a_layer_above_its_own():
    found = upward_imports(CORE, LAYERS)
    assert not found, "imports from a higher layer:\n" + "\n".join(described(found, ROOT))


def test_at_most_fifteen_modules_side_by_side_at_the_top_of_the_core():
    top = sorted(
        p.name for p in CORE.iterdir() if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())
    )
    assert "base" in top and "__init__.py" in top  # the listing found them
    assert len(top) <= MOST_AT_TOP, top


def test_the_architecture_page_draws_the_layers_in_this_order():
    """docs/architecture.md's picture shows each layer's first module, top layer first."""
    section = ARCHITECTURE.read_text().split("## Layers\n", 1)[1]
    picture = section.split("```", 2)[1].splitlines()
    rows = []
    for names in reversed(LAYERS):
        shown = _shown_as(names[0])
        rows.append(next((i for i, line in enumerate(picture) if line.strip().startswith(shown)), None))
    assert None not in rows and rows == sorted(rows), list(zip(reversed(LAYERS), rows, strict=True))


def _shown_as(module: str) -> str:
    """How the picture names a module: ``base/``, ``hookspecs.py``, ``__init__.py``."""
    if module == CORE.name:
        return "__init__.py"
    path = CORE / module.removeprefix(f"{CORE.name}.")
    return f"{path.name}/" if path.is_dir() else f"{path.name}.py"


SAMPLE_LAYERS = (("sample.low",), ("sample.high",), ("sample",))


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A package with a low and a high layer; ``low`` reaches up three ways, ``high`` down once."""
    package = tmp_path / "sample"
    for folder in (package, package / "low", package / "high"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (package / "high" / "views.py").write_text("from sample.low.types import Thing\n")
    (package / "low" / "types.py").write_text(
        textwrap.dedent("""\
        from __future__ import annotations

        from typing import TYPE_CHECKING

        from sample.high import views

        if TYPE_CHECKING:
            from sample.high.views import Thing


        class Thing:
            def render(self) -> str:
                from ..high import views as late
                return late.__name__
    """)
    )
    return package


def test_the_check_catches_upward_imports_however_written(sample: Path):
    """Module-level, type-checking-only and function-level imports upward are all caught; downward is not."""
    found = described(upward_imports(sample, SAMPLE_LAYERS), sample.parent)
    assert sorted(found) == [
        "sample/low/types.py:13 sample.low.types -> sample.high.views",
        "sample/low/types.py:5 sample.low.types -> sample.high.views",
        "sample/low/types.py:8 sample.low.types -> sample.high.views",
    ]


def test_the_check_names_a_module_no_layer_holds(sample: Path):
    (sample / "stray.py").write_text("")
    assert unplaced(sample, SAMPLE_LAYERS) == ["sample.stray"]
    assert unplaced(sample, SAMPLE_LAYERS[:2] + (("sample", "sample.stray"),)) == []
