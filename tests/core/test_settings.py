from pathlib import Path

import pytest

from modelplatform import InvalidArgument, Settings
from modelplatform.base.settings import resolve


def test_defaults():
    settings = resolve(env={})
    assert settings == Settings()
    assert (settings.http_port, settings.grpc_port) == (8000, 8001)
    assert settings.model_repository == Path("model_repository")


def test_precedence_file_env_flags(tmp_path):
    config = tmp_path / "settings.toml"
    config.write_text(
        'http_port = 9000\ngrpc_port = 9001\nlog_format = "json"\n[plugins.grps]\ndefault_model = "simple"\n'
    )
    env = {"MODELPLATFORM_GRPC_PORT": "9101", "MODELPLATFORM_DISABLE_PLUGINS": "grps-rest, tfserving-rest"}
    settings = resolve(config, env=env, overrides={"http_port": 9200, "grpc_port": None})
    assert settings.http_port == 9200  # flag beats file
    assert settings.grpc_port == 9101  # env beats file; None flag leaves it
    assert settings.log_format == "json"  # file beats default
    assert settings.disable_plugins == ("grps-rest", "tfserving-rest")
    assert settings.options_for("grps") == {"default_model": "simple"}


def test_bad_values_are_refused(tmp_path):
    with pytest.raises(InvalidArgument, match="http_port"):
        resolve(env={"MODELPLATFORM_HTTP_PORT": "eighty"})
    with pytest.raises(InvalidArgument, match="model_control_mode"):
        resolve(env={}, overrides={"model_control_mode": "sometimes"})
    with pytest.raises(InvalidArgument, match="unknown setting"):
        bad = tmp_path / "bad.toml"
        bad.write_text("no_such_setting = 1\n")
        resolve(bad, env={})


def test_every_setting_is_documented():
    import dataclasses

    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "configuration.md").read_text()
    missing = [
        f.name
        for f in dataclasses.fields(Settings)
        if f.name != "plugin_options" and f"`{f.name}`" not in doc
    ]
    assert missing == []
    assert "[plugins." in doc  # plugin_options come from [plugins.<name>] tables
