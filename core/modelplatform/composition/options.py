"""Every installed plugin's option declarations, and settings resolved with them.

The options must be known before the command line is parsed (a flag is a
plugin's), so every installed plugin's entry point is loaded here, enabled or
not; which plugins then run follows ``--plugins``/``--disable-plugin`` as
always (plugins.py). A plugin that fails to load declares nothing here: it is
reported by ``platform plugins`` and at start-up.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pluggy
import structlog

from modelplatform import hookspecs
from modelplatform.base import settings as settings_module
from modelplatform.base.core_options import CORE_OPTIONS
from modelplatform.base.errors import PluginError
from modelplatform.base.options import Declared, Option, declared_by
from modelplatform.base.settings import Settings

log = structlog.get_logger("modelplatform.composition.options")


@functools.cache
def installed_options() -> tuple[Declared, ...]:
    """The options of every installed plugin, checked for clashes.

    Read once per process (``serve`` builds its flags from them, then resolves with
    them): which distributions are installed is a fact of the process, not of a server.
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    for ep in sorted(metadata.entry_points(group=hookspecs.PROJECT), key=lambda ep: ep.name):
        try:
            manager.register(ep.load(), name=ep.name)
        except Exception as error:  # noqa: BLE001 - a broken plugin must not hide the others' options
            log.warning("plugin_options_unavailable", plugin=ep.name, reason=str(error))
    return declared_options(manager)


def declared_options(manager: pluggy.PluginManager) -> tuple[Declared, ...]:
    declared: list[Declared] = []
    for impl in manager.hook.register_options.get_hookimpls():
        options: Any = impl.function() or ()  # a plugin's answer, checked item by item below
        for option in options:
            if not isinstance(option, Option):
                raise PluginError(f"plugin '{impl.plugin_name}': register_options returned {option!r}")
        declared += declared_by(impl.plugin_name, options)
    declared = _shared(declared)
    _refuse_clashes([*CORE_OPTIONS, *declared])
    return tuple(declared)


def _shared(declared: Sequence[Declared]) -> list[Declared]:
    """An option of a shared ``table`` declared alike by several entry points: one, with them all.

    Declared differently, both stay and :func:`_refuse_clashes` names the two plugins.
    """
    kept: list[Declared] = []
    for one in declared:
        same = next((i for i, k in enumerate(kept) if one.option.table and k.option == one.option
                     and k.owner == one.owner), None)  # fmt: skip
        if same is None:
            kept.append(one)
        else:
            kept[same] = dataclasses.replace(kept[same], providers=(*kept[same].providers, *one.providers))
    return kept


def _refuse_clashes(declared: Sequence[Declared]) -> None:
    """One flag, variable or config key names one option: a clash names both providers."""
    seen: dict[object, Declared] = {}
    for one in declared:
        names: list[object] = [one.env, one.key, one.dest, *(one.flags if one.option.cli else ())]
        for name in names:
            other = seen.setdefault(name, one)
            if other is not one:
                raise PluginError(
                    f"option {_shown(name)} is declared by {_owner(other)} and by {_owner(one)}"
                )


def _shown(name: object) -> str:
    return ".".join(name) if isinstance(name, tuple) else str(name)


def _owner(declared: Declared) -> str:
    if not declared.owner:
        return "the core"
    return " and ".join(f"plugin '{name}'" for name in declared.providers or (declared.owner,))


def resolve(
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    declared: Sequence[Declared] | None = None,
    warn: Callable[[str, dict[str, str]], None] | None = None,
) -> Settings:
    """Settings with the installed plugins' options (``declared``: :func:`installed_options`)."""
    plugin_options = installed_options() if declared is None else declared
    return settings_module.resolve(config_file, env, overrides, plugin_options, warn)
