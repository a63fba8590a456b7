"""A table shared by several entry points (``Option.table``) and a config-table option (``dict``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pluggy
import pytest

from modelplatform import Option, hookimpl, hookspecs
from modelplatform.base.errors import InvalidArgument, PluginError
from modelplatform.base.settings import resolve
from modelplatform.composition.options import declared_options


def _plugin(*options: Option) -> Any:
    @hookimpl
    def register_options() -> tuple[Option, ...]:
        return options

    return SimpleNamespace(register_options=register_options)


def _declared(**plugins: tuple[Option, ...]) -> Any:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    for name, options in plugins.items():
        manager.register(_plugin(*options), name=name.replace("_", "-"))
    return declared_options(manager)


def _check_nodes(table: dict[str, Any]) -> None:
    if not isinstance(table.get("nodes"), list):
        raise InvalidArgument("[plugins.duo.graph]: nodes must be a list")


SHARED = (
    Option("depth", int, 2, "How deep.", table="duo"),
    Option("graph", dict, None, "A structure.", _check_nodes, cli=False, table="duo"),
)


def test_a_shared_table_is_one_namespace_with_every_provider():
    declared = _declared(duo_http=SHARED, duo_grpc=SHARED)
    assert [(d.owner, d.providers, d.flags[0], d.env) for d in declared][0] == (
        "duo", ("duo-http", "duo-grpc"), "--duo-depth", "MODELPLATFORM_DUO_DEPTH"
    )  # fmt: skip
    settings = resolve(env={"MODELPLATFORM_DUO_DEPTH": "5"}, plugin_options=declared,
                       overrides={"disable_plugins": ("duo-http",)})  # fmt: skip
    assert settings.options_for("duo") == {"depth": 5, "graph": None}  # one provider still enabled
    with pytest.raises(InvalidArgument, match="plugins 'duo-http' and 'duo-grpc', which are disabled"):
        resolve(env={}, plugin_options=declared,
                overrides={"disable_plugins": ("duo-http", "duo-grpc"), "duo_depth": 3})  # fmt: skip


def test_a_shared_table_declared_differently_is_a_clash():
    other = (Option("depth", int, 3, "Deeper.", table="duo"),)
    with pytest.raises(PluginError, match="plugin 'duo-http' and by plugin 'duo-grpc'"):
        _declared(duo_http=SHARED, duo_grpc=other)


def test_a_dict_option_is_a_config_table_only(tmp_path: Path):
    declared = _declared(duo_http=SHARED)
    config = tmp_path / "config.toml"
    config.write_text('[plugins.duo]\ndepth = 4\n[plugins.duo.graph]\nnodes = ["a"]\n')
    env = {"MODELPLATFORM_DUO_GRAPH": "ignored: a table has no variable"}
    settings = resolve(config, env=env, plugin_options=declared)
    assert settings.options_for("duo") == {"depth": 4, "graph": {"nodes": ["a"]}}
    config.write_text("[plugins.duo.graph]\nedges = 1\n")
    with pytest.raises(InvalidArgument, match="nodes must be a list"):
        resolve(config, env={}, plugin_options=declared)
    config.write_text("[plugins.duo]\ngraph = 3\n")
    with pytest.raises(InvalidArgument, match="setting graph: cannot use 3"):
        resolve(config, env={}, plugin_options=declared)
    config.write_text("[plugins.duo]\ndepht = 3\n")
    with pytest.raises(InvalidArgument, match=r"\[plugins.duo\]: unknown option\(s\) \['depht'\]"):
        resolve(config, env={}, plugin_options=declared)
    with pytest.raises(ValueError, match="cli=False"):
        Option("graph", dict)


def test_a_fraction_is_no_whole_number(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text("[plugins.duo]\ndepth = 2.5\n")
    with pytest.raises(InvalidArgument, match="setting depth: cannot use 2.5"):
        resolve(config, env={}, plugin_options=_declared(duo_http=SHARED))
    config.write_text("[plugins.duo]\ndepth = 3.0\n")
    assert resolve(config, env={}, plugin_options=_declared(duo_http=SHARED)).options_for("duo")["depth"] == 3


def test_a_table_no_plugin_declares_is_kept_as_written_and_named_in_a_warning(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text("[plugins.elsewhere]\nanything = 1\n")
    warnings: list[tuple[str, dict[str, str]]] = []
    settings = resolve(
        config, env={}, plugin_options=_declared(duo_http=SHARED), warn=lambda *said: warnings.append(said)
    )
    assert settings.options_for("elsewhere") == {"anything": 1}
    assert [(event, fields["table"]) for event, fields in warnings] == [
        ("plugin_table_undeclared", "[plugins.elsewhere]")
    ]
