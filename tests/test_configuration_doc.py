"""docs/configuration.md is true to the option declarations (the core's and the in-tree plugins')."""

from __future__ import annotations

import dataclasses
import re
import sys

from modelplatform.base.core_options import CORE_OPTIONS
from modelplatform.base.settings import Settings
from modelplatform.composition.options import installed_options
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import options_reference  # a script beside the tests, found through the path above

PAGE = (ROOT / "docs" / "configuration.md").read_text()
DECLARED = (*CORE_OPTIONS, *installed_options())
IN_TREE = {"metrics", "tracing", "shared-memory", "repository", "storage", "python", "grps"}


def test_the_generated_reference_is_current():
    assert options_reference.current() in PAGE, "run: python scripts/options_reference.py --write"


def test_every_declared_option_is_in_the_page_with_its_flag_variable_and_key():
    assert IN_TREE <= {d.owner for d in DECLARED}
    for declared in DECLARED:
        rows = PAGE.split("<!-- options:begin -->")[1].splitlines()
        row = next((line for line in rows if line.startswith(f"| `{declared.key_text}` |")), "")
        if declared.option.in_environment:
            assert f"`{declared.env}`" in row, declared.key_text
        else:  # a table (type dict): the config file alone gives it
            assert row.count("(config table only)") == 2 and declared.env not in row, declared.key_text
        if declared.option.cli:
            assert all(f"`{flag}`" in row for flag in declared.flags), declared.key_text


def test_the_page_names_no_option_that_does_not_exist():
    """The settings table (before the plugins' own tables) names declared options only."""
    table = PAGE.split("## Where options come from")[0]
    named = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE))
    known = {d.key_text for d in DECLARED} | {f.name for f in dataclasses.fields(Settings)}
    assert named and named <= known, sorted(named - known)
    listed = set(re.findall(r"^\| `([^`]+)` \|", PAGE.split("<!-- options:begin -->")[1], re.MULTILINE))
    assert listed == {d.key_text for d in DECLARED}
