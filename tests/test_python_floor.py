"""``requires-python`` is the true floor: every pyproject says it, and the code needs exactly it.

The code's need is the newest Python that one of its features appeared in:
syntax (``except*``, PEP 695 type parameters and ``type`` aliases) and the
standard-library names in FEATURES. The floor must not be lower (an install
on that Python would fail at run time) nor higher (it would refuse Pythons
the code runs on) than that need.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PYPROJECTS = [ROOT / "pyproject.toml", *sorted((ROOT / "plugins").glob("*/pyproject.toml"))]
SOURCES = [ROOT / "core", ROOT / "plugins"]

#: Standard-library names by the Python version that added them.
FEATURES: dict[str, tuple[int, int]] = {
    **dict.fromkeys([
        "tomllib", "wsgiref.types", "asyncio.TaskGroup", "asyncio.timeout", "asyncio.timeout_at",
        "asyncio.Runner", "enum.StrEnum", "enum.ReprEnum", "enum.verify", "datetime.UTC",
        "contextlib.chdir", "hashlib.file_digest", "operator.call", "ExceptionGroup",
        "BaseExceptionGroup", "typing.Self", "typing.LiteralString", "typing.Never",
        "typing.assert_never", "typing.assert_type", "typing.reveal_type", "typing.Required",
        "typing.NotRequired", "typing.TypeVarTuple", "typing.Unpack", "typing.dataclass_transform",
        "typing.get_overloads", "typing.clear_overloads",
    ], (3, 11)),
    **dict.fromkeys([
        "itertools.batched", "typing.override", "typing.TypeAliasType", "collections.abc.Buffer",
        "calendar.Month", "calendar.Day", "sys.monitoring",
    ], (3, 12)),
    **dict.fromkeys([
        "typing.ReadOnly", "typing.TypeIs", "typing.NoDefault", "warnings.deprecated",
        "copy.replace",
    ], (3, 13)),
}  # fmt: skip


def _floor(requires: str) -> tuple[int, int]:
    match = re.fullmatch(r">=\s*3\.(\d+)", requires.strip())
    assert match, f"requires-python {requires!r}: expected '>=3.N'"
    return 3, int(match.group(1))


def test_every_pyproject_states_the_same_floor():
    stated = {path.relative_to(ROOT).as_posix(): _requires(path) for path in PYPROJECTS}
    assert len(PYPROJECTS) >= 9 and None not in stated.values(), stated
    assert len(set(stated.values())) == 1, stated


def test_the_floor_is_what_the_code_needs():
    floor = _floor(_requires(PYPROJECTS[0]))
    needs: dict[tuple[int, int], set[str]] = {}
    for path in _python_files():
        # feature_version: on a newer interpreter, syntax newer than the floor fails here
        tree = ast.parse(path.read_bytes(), str(path), feature_version=floor)
        for feature, version in _features(tree):
            needs.setdefault(version, set()).add(f"{feature} ({path.relative_to(ROOT)})")
    newest = max(needs, default=(3, 0))
    where = sorted(needs.get(newest, ()))[:5]
    assert newest == floor, f"requires-python says {floor}, the code needs {newest}: {where}"


def test_the_scan_finds_what_it_looks_for():
    code = "import tomllib\nimport itertools as it\nit.batched([], 2)\nfrom typing import Self\n"
    found = {name for name, _ in _features(ast.parse(code))}
    assert found == {"tomllib", "itertools.batched", "typing.Self"}
    group = ast.parse("try:\n  pass\nexcept* ValueError:\n  pass\n")
    assert [version for _, version in _features(group)] == [(3, 11)]


def _requires(pyproject: Path) -> str | None:
    return tomllib.loads(pyproject.read_text())["project"].get("requires-python")


def _python_files() -> Iterator[Path]:
    for folder in SOURCES:
        yield from (p for p in folder.rglob("*.py") if "egg-info" not in p.as_posix())


def _features(tree: ast.AST) -> Iterator[tuple[str, tuple[int, int]]]:
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        for name in _names_used(node, aliases):
            if name in FEATURES:
                yield name, FEATURES[name]
        if type(node).__name__ == "TryStar":
            yield "except*", (3, 11)
        if type(node).__name__ == "TypeAlias" or getattr(node, "type_params", None):
            yield "PEP 695 type parameters", (3, 12)


def _aliases(tree: ast.AST) -> dict[str, str]:
    """``import a.b as c``: c means a.b."""
    return {alias.asname: alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
            for alias in node.names if alias.asname}  # fmt: skip


def _names_used(node: ast.AST, aliases: dict[str, str]) -> Iterator[str]:
    """Dotted names a node imports or reads."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module:
        yield node.module
        yield from (f"{node.module}.{alias.name}" for alias in node.names)
    elif isinstance(node, ast.Attribute):
        parts = [node.attr]
        while isinstance(node.value, ast.Attribute):
            node = node.value
            parts.append(node.attr)
        if isinstance(node.value, ast.Name):
            yield ".".join([aliases.get(node.value.id, node.value.id), *reversed(parts)])
    elif isinstance(node, ast.Name):
        yield node.id
