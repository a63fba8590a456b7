"""Settings from their sources: defaults < config file < MODELPLATFORM_* env < flags.

Every option is declared once (options.py): the core's in core_options.py, a
plugin's by its ``register_options`` hook. Core values become
:class:`~modelplatform.base.settings.Settings` fields; a plugin's become
``Settings.plugin_options[<plugin>]`` with every declared option present.

A disabled plugin's options (``--plugins``, ``--disable-plugin``):

- given as a flag, they are refused: the operator asked for something that
  will not happen (``--metrics-port is an option of plugin 'metrics', which
  is disabled (--disable-plugin metrics)``);
- given in the environment or the config file, which are often shared by
  several deployments, they are passed over with a warning naming the plugin
  (``plugin_option_ignored``): never silently.

A plugin's ``[plugins.<name>]`` table may hold only its declared options (an
unknown key stops start-up naming it); an option of type ``dict`` is a table
inside it (``[plugins.grps.dag]``), read from the file only. Options of a
table shared by several entry points (``Option.table``: grps-rest and
grps-grpc share ``[plugins.grps]``) apply while any of them is enabled. A
``[plugins.<name>]`` table that no installed plugin declares options for is
kept as written in ``Settings.plugin_options`` (for a plugin that reads its
table itself), with a warning naming it (``plugin_table_undeclared``: a
misspelled ``[plugins.pyhton]`` shows); nothing in it is dropped or checked.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from modelplatform.base.core_options import CORE_OPTIONS
from modelplatform.base.errors import InvalidArgument
from modelplatform.base.options import Declared
from modelplatform.base.settings import Settings, check, is_remote

log = structlog.get_logger("modelplatform.base.resolution")

Warn = Callable[[str, dict[str, str]], None]
_FLAG, _ENV, _FILE = "flag", "environment", "config file"


def merge(
    config_file: Path | None,
    env: Mapping[str, str],
    overrides: Mapping[str, Any],
    plugin_declared: Sequence[Declared],
    warn: Warn | None,
) -> Settings:
    file = _read(config_file) if config_file is not None else {}
    given = {dest: value for dest, value in overrides.items() if value is not None}
    known = {d.dest for d in (*CORE_OPTIONS, *plugin_declared)}  # plugin_options come from declarations
    _refuse_unknown(set(given) - known, "unknown setting(s)")
    top_level = {d.key[0] for d in (*CORE_OPTIONS, *plugin_declared) if len(d.key) == 1}
    _refuse_unknown(set(file) - top_level - {"plugins"}, "unknown setting(s)")
    core = {d.option.name: d.checked(v) for d, v in _chosen(CORE_OPTIONS, file, env, given)}
    settings = _core_settings(core)
    plugin_values = _plugin_values(settings, plugin_declared, file, env, given, warn or _logged)
    settings = dataclasses.replace(settings, **plugin_values)
    check(settings)
    return settings


def _logged(event: str, fields: dict[str, str]) -> None:
    log.warning(event, **fields)


def _refuse_unknown(names: set[str], what: str) -> None:
    if names:
        raise InvalidArgument(f"{what}: {', '.join(sorted(names))}")


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise InvalidArgument(f"config file {path}: {error}") from None


def _from_file(declared: Declared, file: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether the file gives the option, and its value."""
    node: Any = file
    for part in declared.key:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    if declared.key == ("plugins",) and isinstance(node, Mapping):
        return False, None  # [plugins.<name>] tables, not the allow-list ``plugins = [...]``
    return True, node


def _sources(
    declared: Declared, file: Mapping[str, Any], env: Mapping[str, str], given: Mapping[str, Any]
) -> list[tuple[str, Any]]:
    """The sources that give this option, lowest precedence first."""
    found = []
    in_file, value = _from_file(declared, file)
    if in_file:
        found.append((_FILE, value))
    if declared.option.in_environment and declared.env in env:
        found.append((_ENV, env[declared.env]))
    if declared.dest in given:
        found.append((_FLAG, given[declared.dest]))
    return found


def _chosen(
    declared: Sequence[Declared], file: Mapping[str, Any], env: Mapping[str, str], given: Mapping[str, Any]
) -> list[tuple[Declared, Any]]:
    """Each option given by some source, with the value of the highest one."""
    chosen = []
    for one in declared:
        sources = _sources(one, file, env, given)
        if sources:
            chosen.append((one, sources[-1][1]))
    return chosen


def _core_settings(values: dict[str, Any]) -> Settings:
    """A URL given as the repository goes to ``model_repository_url`` (a Path loses its ``//``)."""
    location = values.get("model_repository")
    if isinstance(location, str) and is_remote(location):
        del values["model_repository"]
        values["model_repository_url"] = location
    elif location is not None:
        values["model_repository"] = Path(location)
    return Settings(**values)


def _plugin_values(
    settings: Settings,
    declared: Sequence[Declared],
    file: Mapping[str, Any],
    env: Mapping[str, str],
    given: Mapping[str, Any],
    warn: Warn,
) -> dict[str, Any]:
    owners = list(dict.fromkeys(d.owner for d in declared))
    tables = _tables(file)
    values: dict[str, dict[str, Any]] = {}
    for owner in owners:
        options = [d for d in declared if d.owner == owner]
        if any(settings.allows(plugin) for plugin in _providers(options[0])):
            values[owner] = _owner_values(owner, options, file, env, given, tables.pop(owner, {}))
        else:
            _passed_over(settings, options, file, env, given, warn)
            tables.pop(owner, None)
    for name in tables:  # kept for a plugin that reads its table itself, but never silently
        warn("plugin_table_undeclared", {"table": f"[plugins.{name}]",
                                         "why": "no installed plugin declares options for it"})  # fmt: skip
    listeners = tuple(dict.fromkeys((d.option.tls_listener, d.owner) for d in declared
                                    if d.option.tls_listener and d.owner in values))  # fmt: skip
    return {"plugin_options": {**tables, **values}, "tls_listeners": listeners}


def _providers(declared: Declared) -> tuple[str, ...]:
    """The plugins whose options these are: the owner, or the entry points sharing its table."""
    return declared.providers or (declared.owner,)


def _tables(file: Mapping[str, Any]) -> dict[str, Any]:
    """The config file's ``[plugins.*]`` tables, by plugin (or table) name."""
    tables = file.get("plugins", {})
    return dict(tables) if isinstance(tables, Mapping) else {}  # else the allow-list


def _owner_values(
    owner: str,
    options: Sequence[Declared],
    file: Mapping[str, Any],
    env: Mapping[str, str],
    given: Mapping[str, Any],
    table: Any,
) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        raise InvalidArgument(f"config file: plugins.{owner} must be a table")
    namespaced = {d.option.name for d in options if len(d.key) == 3}
    unknown = sorted(set(table) - namespaced)
    if unknown:
        raise InvalidArgument(f"[plugins.{owner}]: unknown option(s) {unknown}")
    values = {d.option.name: d.option.default for d in options}
    values.update({d.option.name: d.checked(v) for d, v in _chosen(options, file, env, given)})
    return values


def _passed_over(
    settings: Settings,
    options: Sequence[Declared],
    file: Mapping[str, Any],
    env: Mapping[str, str],
    given: Mapping[str, Any],
    warn: Warn,
) -> None:
    plugins = _providers(options[0])
    why = ", ".join(_why_disabled(settings, plugin) for plugin in plugins)
    which = " and ".join(f"'{plugin}'" for plugin in plugins)
    whose = f"plugin {which}, which is" if len(plugins) == 1 else f"plugins {which}, which are"
    for declared in options:
        for source, _ in _sources(declared, file, env, given):
            name = {_FLAG: declared.flags[0], _ENV: declared.env, _FILE: declared.key_text}[source]
            message = f"{name} is an option of {whose} disabled ({why})"
            if source == _FLAG:
                raise InvalidArgument(message)
            warn("plugin_option_ignored", {"plugin": ",".join(plugins), "option": name, "source": source,
                                           "message": message})  # fmt: skip


def _why_disabled(settings: Settings, owner: str) -> str:
    if owner in settings.disable_plugins:
        return f"--disable-plugin {owner}"
    return f"not in --plugins {','.join(settings.plugins)}"
