"""Print (or, with --write, update) the option reference of docs/configuration.md.

The block between ``<!-- options:begin -->`` and ``<!-- options:end -->`` is
generated from the declarations: the core's (core_options.py) and every
installed plugin's (``register_options``); tests/test_configuration_doc.py
fails when it is stale. Run with the in-tree plugins installed (``make``'s venv).
"""

from __future__ import annotations

import sys
from pathlib import Path

from modelplatform.base.core_options import CORE_OPTIONS
from modelplatform.base.options import Declared
from modelplatform.composition.options import installed_options

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"


def _default(declared: Declared) -> str:
    default = declared.option.default
    if default is None:
        return "as HTTP" if declared.option.tls_listener else "none"
    if isinstance(default, tuple):
        return ", ".join(default) or "none"
    return str(default).lower() if isinstance(default, bool) else str(default) or '""'


def _row(declared: Declared) -> str:
    flags = ", ".join(f"`{flag}`" for flag in declared.flags) if declared.option.cli else "(config/env)"
    variable = f"`{declared.env}`" if declared.option.in_environment else "(config table only)"
    if not declared.option.in_environment:
        flags = "(config table only)"
    cells = [f"`{declared.key_text}`", flags, variable, f"`{_default(declared)}`",
             declared.option.help.replace("|", "\\|")]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def reference(declared: tuple[Declared, ...]) -> str:
    """The block: one table per panel (the core's panels, then each plugin's)."""
    panels: dict[str, list[Declared]] = {}
    for one in declared:
        panels.setdefault(one.panel or "Options", []).append(one)
    parts = [BEGIN, ""]
    for title, rows in panels.items():
        parts += [f"### {title}", "", "| config key | flag | variable | default | help |",
                  "|---|---|---|---|---|", *map(_row, rows), ""]  # fmt: skip
    return "\n".join([*parts, END])


def current() -> str:
    return reference((*CORE_OPTIONS, *installed_options()))


def main() -> None:
    block = current()
    if sys.argv[1:] != ["--write"]:
        print(block)
        return
    text = PAGE.read_text()
    before, _, rest = text.partition(BEGIN)
    _, _, after = rest.partition(END)
    PAGE.write_text(before + block + after)


if __name__ == "__main__":
    main()
