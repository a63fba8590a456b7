"""Every lint and type suppression in the tree says why (CONTRIBUTING.md, "Lint and types").

``# noqa: CODE - why`` and ``# type: ignore[code]  # why``: a bare ``# noqa``, a
``# type: ignore`` without its error code, or either without a reason fails. Only
comments are read (tokenize), so a string that mentions them is no suppression.
Whether a suppression is still needed is ruff's RUF100 and mypy's
warn_unused_ignores, both run by ``make lint``.
"""

from __future__ import annotations

import io
import re
import tokenize
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Folders never scanned: environments, build output, caches, and protoc's generated code.
SKIPPED_FOLDERS = {".venv", "build", "dist", "node_modules", "__pycache__"}
GENERATED = re.compile(r"_pb2(_grpc)?\.pyi?$")

NOQA = re.compile(r"#\s*noqa\b", re.IGNORECASE)
EXPLAINED_NOQA = re.compile(r"#\s*noqa:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*\s+-\s+\S")
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore\b")
EXPLAINED_TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore\[[a-z-]+(\s*,\s*[a-z-]+)*\]\s+#\s*\S")


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, comment) for each suppression in ``source`` that names no code or gives no reason."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        comment = token.string
        if NOQA.search(comment) and not EXPLAINED_NOQA.search(comment):
            found.append((token.start[0], comment))
        elif TYPE_IGNORE.search(comment) and not EXPLAINED_TYPE_IGNORE.search(comment):
            found.append((token.start[0], comment))
    return found


def python_files(root: Path) -> list[Path]:
    """The tree's own Python: every folder but hidden ones, environments, build output and generated code."""
    files = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts[:-1]
        if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in parts):
            continue
        if not GENERATED.search(path.name):
            files.append(path)
    return files


def test_every_suppression_in_the_tree_names_its_code_and_says_why() -> None:
    files = python_files(ROOT)
    assert any(p.is_relative_to(ROOT / "core") for p in files)  # the scan found the tree
    assert any(p.is_relative_to(ROOT / "benchmarks") for p in files)
    problems = [
        f"{path.relative_to(ROOT)}:{line}: {comment}"
        for path in files
        for line, comment in unexplained(path.read_text(encoding="utf-8"))
    ]
    assert not problems, "suppressions without a code and a reason:\n" + "\n".join(problems)


PLANTED = """\
import os  # noqa: F401 - re-exported for the plugins
import sys  # noqa: F401
import re  # noqa
x: int = "a"  # type: ignore[assignment]  # the stub is wrong
y: int = "b"  # type: ignore[assignment]
z: int = "c"  # type: ignore
text = "# noqa and # type: ignore in a string are no suppressions"
def f():  # noqa: E731 -
    pass
"""


def test_the_scan_catches_every_planted_unexplained_suppression() -> None:
    assert [line for line, _ in unexplained(PLANTED)] == [2, 3, 5, 6, 8]


def test_mypy_checks_every_plugin() -> None:
    """A new plugin folder is type-checked too: pyproject names each in mypy's files and path."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    roots = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())
    packages = {
        f"plugins/{root.name}/{package.parent.name}"
        for root in roots
        for package in root.glob("*/__init__.py")
    }
    assert packages and packages <= set(config["files"])
    assert {f"plugins/{root.name}" for root in roots} <= set(config["mypy_path"].split(":"))
