"""Every hook spec has a test that calls it, marked ``@pytest.mark.hook("<name>")``.

The marker is read from the test sources with ``ast`` (nothing is imported or
run), and only where it can mean something: on a ``test_*`` function or a
``Test*`` class in a ``test_*.py`` file, or in a module's ``pytestmark``.
A marker naming no hook fails too, so a typo cannot pass for coverage.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

from modelplatform import hookspecs
from tests.conftest import ROOT

TESTS = ROOT / "tests"


def _spec_names() -> set[str]:
    return {
        name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, "modelplatform_spec")
    }  # fmt: skip


def _hook_argument(node: ast.expr) -> str | None:
    """``"x"`` for ``pytest.mark.hook("x")``; None for any other expression."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    mark = node.func.value
    if node.func.attr != "hook" or not (isinstance(mark, ast.Attribute) and mark.attr == "mark"):
        return None
    if not (isinstance(mark.value, ast.Name) and mark.value.id == "pytest"):
        return None
    if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Constant):
        return "<not one string literal>"
    return str(node.args[0].value)


def _marked_tests(node: ast.AST) -> Iterator[str]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name.startswith("test_"):
            yield from filter(None, map(_hook_argument, child.decorator_list))
        elif isinstance(child, ast.ClassDef) and child.name.startswith("Test"):
            yield from filter(None, map(_hook_argument, child.decorator_list))
            yield from _marked_tests(child)


def _module_marks(tree: ast.Module) -> Iterator[str]:
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in statement.targets
        ):
            value = statement.value
            items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            yield from filter(None, map(_hook_argument, items))


def hooks_called_by_tests(root: Path = TESTS) -> dict[str, list[str]]:
    """Hook name -> the test files whose tests are marked as calling it."""
    called: dict[str, list[str]] = {}
    for path in sorted(root.rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for name in [*_module_marks(tree), *_marked_tests(tree)]:
            called.setdefault(name, []).append(str(path.relative_to(root)))
    return called


def test_every_hook_spec_has_a_test_that_calls_it():
    missing = _spec_names() - set(hooks_called_by_tests())
    assert not missing, f"no test is marked @pytest.mark.hook(...) for: {sorted(missing)}"


def test_every_hook_marker_names_a_hook_spec():
    unknown = {name: files for name, files in hooks_called_by_tests().items() if name not in _spec_names()}
    assert not unknown, f"markers naming no hook spec: {unknown}"


def test_the_reader_sees_only_markers_on_tests(tmp_path):
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "pytestmark = [pytest.mark.hook('startup')]\n"
        "@pytest.mark.hook('register_codecs')\n"
        "def test_codec(): pass\n"
        "@pytest.mark.hook('register_backends')\n"
        "def helper(): pass\n"
        "class TestCli:\n"
        "    @pytest.mark.hook('register_commands')\n"
        "    def test_command(self): pass\n"
        "@pytest.mark.hook(name)\n"
        "def test_dynamic(): pass\n"
    )
    (tmp_path / "helpers.py").write_text("import pytest\n@pytest.mark.hook('shutdown')\ndef test_x(): pass\n")
    assert hooks_called_by_tests(tmp_path) == {
        "startup": ["test_sample.py"],
        "register_codecs": ["test_sample.py"],
        "register_commands": ["test_sample.py"],
        "<not one string literal>": ["test_sample.py"],
    }
