"""The import rules of design.md, enforced.

1. A plugin imports from the core only ``modelplatform`` (the plugin-author
   API) and its documented sub-APIs (:data:`SUB_APIS`), never another core
   submodule; it imports another plugin only through that
   plugin's published API (oip's ``modelplatform_oip.api`` and its generated
   protos), and only a plugin its distribution depends on.
2. The protocol-neutral core modules load no transport: no sanic, grpc,
   httptools or protobuf. Each is imported in a fresh interpreter, which
   reports the import chain of anything it should not have loaded.
3. ``import modelplatform`` (to write a backend) loads no sanic, grpc or httptools.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

CORE = ROOT / "core" / "modelplatform"
PLUGINS = ROOT / "plugins"
#: What one plugin may import of another: its published extension API.
PUBLISHED = {
    "modelplatform_oip": re.compile(r"modelplatform_oip\.(api|protos(\..+)?)$"),
    "modelplatform_ensemble": re.compile(r"modelplatform_ensemble\.api$"),  # the pipeline engine (grps DAG)
}
#: The core's documented sub-APIs (modelplatform/__init__.py lists them): public like ``modelplatform``.
SUB_APIS = {"modelplatform.datatypes", "modelplatform.statistics", "modelplatform.batching"}
GENERATED = re.compile(r"_pb2(_grpc)?\.pyi?$")
NEUTRAL = ["base.inference", "dataplane.facade", "models", "models.scheduling", "models.backend",
           "base.errors", "base.dtypes", "base.validation", "models.stats"]  # fmt: skip
TRANSPORTS = ["sanic", "grpc", "httptools"]


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module name, as ``module`` or ``module.name`` for ``from module import name``."""

    path: Path
    line: int
    module: str
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = f"{self.path.relative_to(ROOT)}:{self.line}"
        return f"{where} {self.module}" + (f" import {', '.join(self.names)}" if self.names else "")


def _core_submodules() -> set[str]:
    return {p.stem for p in CORE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()} - {
        "__init__"
    }


def _plugin_modules() -> Iterator[tuple[str, Path]]:
    """(plugin package, file) for every hand-written module of every plugin package."""
    for package in sorted(PLUGINS.glob("*/modelplatform_*")):
        for path in sorted(package.rglob("*.py")):
            if not GENERATED.search(path.name):
                yield package.name, path


def _imports(path: Path) -> Iterator[Import]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (Import(path, node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield Import(path, node.lineno, node.module, tuple(a.name for a in node.names))


def _core_violation(item: Import, submodules: set[str]) -> bool:
    if item.module.startswith("modelplatform."):
        return item.module not in SUB_APIS
    private = submodules - {name.removeprefix("modelplatform.") for name in SUB_APIS}
    return item.module == "modelplatform" and bool(set(item.names) & private)


def _other_plugin_modules(item: Import, own: str) -> list[str]:
    """The modules of other plugin packages that ``item`` imports (``from p import m`` -> ``p.m``)."""
    top = item.module.split(".")[0]
    if not top.startswith("modelplatform_") or top == own:
        return []
    if item.module == top and item.names:
        return [f"{top}.{name}" for name in item.names]
    return [item.module]


def _allowed_from(module: str) -> bool:
    rule = PUBLISHED.get(module.split(".")[0])
    return bool(rule and rule.match(module))


def test_the_rules_see_every_plugin():
    packages = {package for package, _ in _plugin_modules()}
    assert {"modelplatform_oip", "modelplatform_binary_data", "modelplatform_repository",
            "modelplatform_tfserving", "modelplatform_grps", "modelplatform_python"} <= packages  # fmt: skip


def test_plugins_import_from_the_core_only_modelplatform():
    submodules = _core_submodules()
    assert {"composition", "models", "frontends", "testing"} <= submodules
    bad = [str(i) for _, path in _plugin_modules() for i in _imports(path) if _core_violation(i, submodules)]
    assert not bad, "plugins must import only `modelplatform` from the core:\n" + "\n".join(bad)


def test_plugins_import_other_plugins_only_through_their_published_api():
    bad = [
        f"{item} -> {module}"
        for package, path in _plugin_modules()
        for item in _imports(path)
        for module in _other_plugin_modules(item, package)
        if not _allowed_from(module)
    ]
    assert not bad, "cross-plugin imports outside a published API:\n" + "\n".join(bad)


def _dependencies(plugin_dir: Path) -> set[str]:
    project = tomllib.loads((plugin_dir / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~;\[ ]", item, maxsplit=1)[0] for item in project.get("dependencies", [])]
    return {name.strip().lower().replace("_", "-") for name in names}


def _distribution(package: str) -> str:
    return package.replace("_", "-")


def test_a_plugin_imports_only_plugins_its_distribution_depends_on():
    missing = []
    for package, path in _plugin_modules():
        declared = _dependencies(PLUGINS / path.relative_to(PLUGINS).parts[0])
        for item in _imports(path):
            for module in _other_plugin_modules(item, package):
                if _distribution(module.split(".")[0]) not in declared:
                    missing.append(f"{item}: add {_distribution(module.split('.')[0])} to its dependencies")
    assert not missing, "\n".join(missing)


def test_the_extensions_are_separate_distributions_that_depend_on_oip():
    for name in ("binary-data", "repository"):
        declared = _dependencies(PLUGINS / name)
        assert "modelplatform-oip" in declared and f"modelplatform-{name}" not in declared
        project = tomllib.loads((PLUGINS / name / "pyproject.toml").read_text())["project"]
        assert project["name"] == f"modelplatform-{name}"
        assert list(project["entry-points"]["modelplatform"]) == [name]
    oip = _dependencies(PLUGINS / "oip")
    assert not {"modelplatform-binary-data", "modelplatform-repository"} & oip


def test_the_rules_catch_what_they_should(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        "import modelplatform\nimport modelplatform.composition.server\nfrom modelplatform.models import X\n"
        "from modelplatform import testing, Tensor\nfrom modelplatform_oip.rest.codec import Limits\n"
        "from modelplatform_oip import api, raw\nfrom modelplatform_oip.protos import grpc_service_pb2\n"
        "from . import sibling\nfrom modelplatform.datatypes import numpy_dtype\n"
        "from modelplatform.base.dtypes import numpy_dtype\n"
    )
    imports = list(_imports(source))
    submodules = _core_submodules()
    assert [i.line for i in imports if _core_violation(i, submodules)] == [2, 3, 4, 10]
    crossing = [m for i in imports for m in _other_plugin_modules(i, "modelplatform_binary_data")]
    assert [m for m in crossing if not _allowed_from(m)] == [
        "modelplatform_oip.rest.codec",
        "modelplatform_oip.raw",
    ]


# ---- What importing a core module loads (fresh interpreters) ----

PROBE = r"""
import importlib, json, sys, traceback

FORBIDDEN = json.loads(sys.argv[2])
chains = {}


class Watch:
    '''Records, for each forbidden module, the modelplatform frames that imported it first.'''

    def find_spec(self, name, path=None, target=None):
        hit = next((f for f in FORBIDDEN if name == f or name.startswith(f + ".")), None)
        if hit and hit not in chains:
            frames = [f for f in traceback.extract_stack() if "modelplatform" in f.filename]
            chains[hit] = " <- ".join(f"{f.filename.split('/core/')[-1]}:{f.lineno}" for f in frames[::-1])
        return None


sys.meta_path.insert(0, Watch())
importlib.import_module(sys.argv[1])
loaded = [f for f in FORBIDDEN if any(m == f or m.startswith(f + ".") for m in sys.modules)]
print(json.dumps({name: chains.get(name, "(loaded before the probe)") for name in loaded}))
"""


def _loaded_by(module: str, forbidden: list[str]) -> dict[str, str]:
    """Which of ``forbidden`` a fresh interpreter holds after ``import module``, and through what."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, module, json.dumps(forbidden)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _report(loaded: dict[str, str]) -> str:
    return "\n".join(f"{name}: imported by {chain}" for name, chain in loaded.items())


@pytest.mark.parametrize("name", NEUTRAL)
def test_a_neutral_core_module_loads_no_transport_and_no_protobuf(name):
    loaded = _loaded_by(f"modelplatform.{name}", [*TRANSPORTS, "google.protobuf"])
    assert not loaded, f"modelplatform.{name} loads:\n{_report(loaded)}"


def test_importing_modelplatform_to_write_a_backend_loads_no_transport():
    loaded = _loaded_by("modelplatform", TRANSPORTS)
    assert not loaded, f"import modelplatform loads:\n{_report(loaded)}"


def test_the_probe_sees_a_transport_being_loaded():
    assert set(_loaded_by("grpc", ["grpc", "sanic"])) == {"grpc"}
