import pytest

from modelplatform import PluginError, Settings
from modelplatform.composition.plugins import build_plugin_manager


def _status(settings: Settings) -> dict[str, str]:
    return {i.name: i.status for i in build_plugin_manager(settings).infos}


def test_entry_points_are_discovered():
    infos = {i.name: i for i in build_plugin_manager(Settings()).infos}
    assert infos["oip-rest"].status == "loaded"
    assert infos["oip-rest"].distribution == "modelplatform-oip"
    assert infos["python"].status == "loaded"


def test_allow_list_and_block_list():
    assert _status(Settings(plugins=("python",)))["oip-rest"] == "disabled"
    assert _status(Settings(plugins=("python",)))["python"] == "loaded"
    assert _status(Settings(disable_plugins=("oip-rest",)))["oip-rest"] == "disabled"


def test_allow_listing_a_missing_plugin_is_an_error():
    with pytest.raises(PluginError, match="not-installed"):
        build_plugin_manager(Settings(plugins=("not-installed",)))
