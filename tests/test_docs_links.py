"""The documentation points at things that exist, inside the repository.

Every relative link in the markdown files, and every path written in
backticks, resolves to a file or folder of this repository; nothing cites a
path outside it (``../shared/...``, ``/work/...``). The Makefile and the
Containerfile name only files that exist (tests included).

What counts as a path, pragmatically: a word with a ``/`` that either ends in
a file extension (``docs/x.md``, ``http/fastlane.py``) or starts with a folder
that exists in one of ROOTS (``plugins/oip``, ``cluster/``). Words with
placeholders (``<model>``, ``{name}``, ``*``, ``...``), URL paths (``/v2/...``)
and MIME types are not paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

MARKDOWN = sorted([
    ROOT / "README.md", ROOT / "CONTRIBUTING.md",
    *(ROOT / "docs").rglob("*.md"), *(ROOT / "plugins").glob("*/README.md"),
])  # fmt: skip
BUILD_FILES = [ROOT / "Makefile", ROOT / "Containerfile"]

#: Folders a doc's path may be relative to (besides the doc's own folder):
#: the repository, the core package, the protos and each plugin distribution.
ROOTS = [ROOT, ROOT / "core/modelplatform", ROOT / "protos", *sorted((ROOT / "plugins").iterdir())]

#: Paths the docs name on purpose that are not ours: grps's own proto in its
#: repository, and the example plugin the backend tutorial builds.
NOT_OURS = ("apis/grps_apis/", "modelplatform_scale/")

EXTENSIONS = {"md", "py", "pyi", "proto", "toml", "txt", "pbtxt", "json", "onnx", "plan", "sh"}
OUTSIDE = re.compile(r"^(\.\./|~/|/(work|home|root|tmp|mnt|srv|opt|Users)/)")
PLACEHOLDER = re.compile(r"[<>{}*$\[\]]|\.\.\.|^[\w.+()-]+:(?!:)")  # also scheme: and key: prefixes
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_and_path_in_a_doc_resolves_inside_the_repository(doc: Path):
    text = doc.read_text()
    problems = [f"link {target}: {why}"
                for target in _links(text) if (why := _link_problem(doc, target))]  # fmt: skip
    for word in _words(CODE_SPAN.findall(FENCE.sub("", text))):
        why = _path_problem(doc.parent, word)
        if why:
            problems.append(f"`{word}`: {why}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("build_file", BUILD_FILES, ids=lambda p: p.name)
def test_build_files_name_files_that_exist(build_file: Path):
    words = _words(build_file.read_text().splitlines())
    # Absolute paths here are the image's or the machine's (/opt/modelplatform), not citations.
    problems = [f"{word}: {why}" for word in words
                if not word.startswith("/") and (why := _path_problem(ROOT, word))]  # fmt: skip
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("word", "bad"), [
    ("docs/configuration.md", False), ("frontends/http/fastlane.py", False), ("frontends/cluster/", False),
    ("frontends/http/sanic_app._read_body", False), ("tests/core/test_cli.py::test_version", False),
    ("/v2/models/<m>/infer", False), ("application/json", False), ("file:1/model.py", False),
    ("../shared/protocol-notes.md", True), ("/work/shared/seeds/x.md", True),
    ("shared/protocol-notes.md", True), ("docs/nowhere.md", True),
    ("tests/core/test_gone.py", True),
    ("tests/core/test_cli.py::test_gone", True), ("plugins/oip/no_such_folder", True),
])  # fmt: skip
def test_the_path_rule(word: str, bad: bool):
    assert bool(_path_problem(ROOT / "docs", word)) is bad


def _links(text: str) -> Iterator[str]:
    for target in LINK.findall(text):
        if not re.match(r"^[a-z][a-z0-9+.-]*:|^#", target):  # URLs, mailto:, anchors
            yield target.split("#", 1)[0]


def _link_problem(doc: Path, target: str) -> str:
    path = (doc.parent / target).resolve()
    if not path.is_relative_to(ROOT):
        return "outside the repository"
    return "" if path.exists() else "does not exist"


def _words(lines: list[str]) -> Iterator[str]:
    for line in lines:
        for word in line.split():
            yield word.strip("'\"(),;:.").removeprefix("-I")


def _path_problem(base: Path, word: str) -> str:
    """Why ``word``, read as a path from a file in ``base``, is wrong; "" if fine or no path."""
    if OUTSIDE.match(word):
        return "outside the repository"
    if "/" not in word or word.startswith(("/", *NOT_OURS)) or PLACEHOLDER.search(word):
        return ""
    path, _, test = word.partition("::")
    name = path.rsplit("/", 1)[-1]
    has_extension = "." in name and name.rsplit(".", 1)[1] in EXTENSIONS
    roots = [base, *ROOTS]
    if not has_extension:  # a folder-like word is a path only when its first folder exists
        roots = [r for r in roots if (r / path.split("/")[0]).exists()]
    found = next((r / path for r in roots if _exists(r / path)), None)
    if found is None:
        return "not in the repository" if roots else ""
    if test and not re.search(rf"^(async )?def {re.escape(test)}\(", found.read_text(), re.M):
        return f"no test {test} in {path}"
    return ""


def _exists(path: Path) -> bool:
    """A file or folder, or ``http/fastlane.FastLaneProtocol``: a name in ``http/fastlane.py``."""
    module, dot, _ = path.name.partition(".")
    return path.exists() or bool(dot) and (path.parent / f"{module}.py").is_file()
