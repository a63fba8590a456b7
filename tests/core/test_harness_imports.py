"""fuzz/ and benchmarks/ use the public API only: ``modelplatform`` and ``modelplatform.testing``.

They drive the real server from outside, as a plugin author's harness would;
what they need of the core is documented in ``modelplatform.testing``. Any
other core module (``modelplatform.frontends...``, ``from modelplatform import
base``) is private and may change under them. Imports at any depth count
(function-level too), and so do ``TYPE_CHECKING`` ones.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

HARNESSES = (ROOT / "fuzz", ROOT / "benchmarks")
#: The public API, its test helpers and its documented sub-APIs.
ALLOWED = {"modelplatform", "modelplatform.testing", "modelplatform.datatypes", "modelplatform.statistics"}
#: Tools that time the core's own stages by design (they wrap its internals in a server started
#: for the measurement), and the internal modules each may reach: nothing else may.
INSTRUMENTS = {"grpc_timeline.py": {"modelplatform.dataplane"}}


def _core_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every core module ``path`` imports (``from modelplatform import x``:
    ``modelplatform.x`` when ``x`` is a module of the core, else ``modelplatform``)."""
    core = ROOT / "core" / "modelplatform"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "modelplatform":
                names += [f"modelplatform.{a.name}" for a in node.names if _is_module(core, a.name)]
        else:
            continue
        for name in names:
            if name == "modelplatform" or name.startswith("modelplatform."):
                yield node.lineno, name


def _is_module(core: Path, name: str) -> bool:
    return (core / f"{name}.py").exists() or (core / name / "__init__.py").exists()


def _violations(paths: list[Path]) -> list[str]:
    return [
        f"{path.name}:{line} imports {module}"
        for path in paths
        for line, module in sorted(_core_imports(path))
        if module not in ALLOWED and module not in INSTRUMENTS.get(path.name, set())
    ]


def test_fuzz_and_benchmarks_import_only_modelplatform_and_its_testing_module() -> None:
    paths = sorted(p for folder in HARNESSES for p in folder.rglob("*.py"))
    assert len(paths) > 10  # the walk found the harnesses
    assert _violations(paths) == [], [str(p.relative_to(ROOT)) for p in paths]


def test_every_name_the_harnesses_take_from_the_public_modules_exists() -> None:
    """ruff and mypy do not read fuzz/ and benchmarks/: a name the API no longer has fails here."""
    missing = []
    for path in sorted(p for folder in HARNESSES for p in folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in ALLOWED:
                module = importlib.import_module(node.module)
                missing += [f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names
                            if not hasattr(module, a.name)]  # fmt: skip
    assert missing == []


def test_the_rule_catches_private_core_imports(tmp_path: Path) -> None:
    source = tmp_path / "planted.py"
    source.write_text(
        "import modelplatform\n"
        "from modelplatform import Tensor, testing\n"
        "from modelplatform.testing import ComposedServer\n"
        "import modelplatform.frontends.http.dispatch\n"
        "from modelplatform import base\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from modelplatform.dataplane.facade import DataPlane\n"
        "def later():\n"
        "    from modelplatform.models.stats import ModelStats\n"
        "from modelplatform_oip.protos import grpc_service_pb2\n"
    )
    found = [line.split(" imports ")[1] for line in _violations([source])]
    assert found == [
        "modelplatform.frontends.http.dispatch",
        "modelplatform.base",
        "modelplatform.dataplane.facade",
        "modelplatform.models.stats",
    ]
