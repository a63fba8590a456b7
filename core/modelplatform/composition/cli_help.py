"""``--help`` for the ``platform`` commands: options in titled panels that fit 80 columns.

typer's own layout gives every panel six columns (long, short, negative long,
negative short, type, help); in 80 columns a panel holding an
``--x/--no-x`` pair shrinks the name columns until option names are cut
(``--model-repository…``). Here a panel has two columns: the option names,
never wrapped (the negative form on its own line), and the help, which wraps
in what is left. Panels come from each option's ``rich_help_panel``, in the
order the command declares them; options without one go to "Options". Only
options are shown: the core commands take no arguments (plugin commands keep
typer's own help).
"""

from __future__ import annotations

from typing import Any

import typer.core
from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

DEFAULT_PANEL = "Options"


class PanelledCommand(typer.core.TyperCommand):
    """A command whose help prints its options grouped in panels, names whole."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        console = Console(highlight=False)
        console.print(Padding(Text(self.get_usage(ctx), style="bold"), 1))
        if self.help:
            console.print(Padding(Text(self.help.strip()), (0, 1, 1, 1)))
        for title, rows in _panels(self, ctx).items():
            console.print(_panel(title, rows))
        if self.epilog:
            console.print(Padding(Text(self.epilog.strip()), 1))


def _panels(command: typer.core.TyperCommand, ctx: Any) -> dict[str, list[tuple[str, str]]]:
    panels: dict[str, list[tuple[str, str]]] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False) or param.param_type_name != "option":
            continue
        title = getattr(param, "rich_help_panel", None) or DEFAULT_PANEL
        row = (_names(param, ctx), getattr(param, "help", None) or "")
        panels.setdefault(title, []).append(row)
    return panels


def _names(param: Any, ctx: Any) -> str:
    """``--a, --b <type>``; a boolean pair's negative form on a second line."""
    names = ", ".join(param.opts)
    if not param.is_flag:
        names += f" {_value_name(param, ctx)}"
    return "\n".join([names, *param.secondary_opts])


def _value_name(param: Any, ctx: Any) -> str:
    if param.metavar:
        return param.metavar
    shown = getattr(param, "display_type_rich", None)  # newer typer options carry no click type
    return (shown(ctx) or "") if shown else param.type.name.upper()


def _panel(title: str, rows: list[tuple[str, str]]) -> Panel:
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold cyan")
    table.add_column(ratio=1, overflow="fold")
    for names, help_text in rows:
        table.add_row(Text(names), Text(help_text))
    return Panel(table, title=title, title_align="left", border_style="dim")
