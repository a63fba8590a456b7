"""The [plugins.grps] options, each on a real server started with a TOML config file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from modelplatform.testing import ServerProcess

from .conftest import call, call_json, make_repository, write_config

PREDICT = "/grps/v1/infer/predict"
COUNT_TWO = {"model": "stream_counter", "gmap": {"s_i32": {"COUNT": 2}}}


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory):
    return make_repository(tmp_path_factory.mktemp("grps-options") / "models", extra=())


@pytest.fixture
def configured(repository, tmp_path):
    def start(options: str) -> Iterator[ServerProcess]:
        config = write_config(tmp_path / "config.toml", options)
        return ServerProcess("--model-repository", str(repository), "--config", str(config))

    return start


def test_start_offline_like_grps(configured) -> None:
    with configured("start_online = false") as server:
        assert call(server, "GET", "/grps/v1/health/ready")[0] == 503
        assert call(server, "GET", "/grps/v1/health/online")[0] == 200
        assert call(server, "GET", "/grps/v1/health/ready")[0] == 200


def test_offline_without_draining_the_server(configured) -> None:
    with configured("offline_drains_server = false") as server:
        assert call(server, "GET", "/grps/v1/health/offline")[0] == 200
        assert call(server, "GET", "/grps/v1/health/ready")[0] == 503
        assert call(server, "GET", "/v2/health/ready", content_type=None)[0] == 200


def test_streaming_asked_by_header_with_its_content_type(configured) -> None:
    options = 'streaming_ctrl_mode = "header_param"\nstreaming_ctrl_key = "X-Stream"\nstreaming_content_type = "application/x-ndjson"'
    with configured(options) as server:
        status, headers, data = call(server, "POST", PREDICT, COUNT_TWO, headers={"X-Stream": "TRUE"})
        assert status == 200 and headers["content-type"] == "application/x-ndjson"
        assert data.count(b'"SUCCESS"') == 2  # one GrpsMessage per step
        status, headers, data = call(server, "POST", f"{PREDICT}?streaming=true", COUNT_TWO)
        assert status == 200 and data.count(b'"SUCCESS"') == 1  # the query key no longer streams


def test_streaming_asked_in_the_body_must_be_a_boolean(configured) -> None:
    with configured('streaming_ctrl_mode = "body_param"\nstreaming_ctrl_key = "stream"') as server:
        status, _, data = call(server, "POST", PREDICT, {**COUNT_TWO, "stream": True})
        assert status == 200 and data.count(b'"SUCCESS"') == 2
        status, reply = call_json(server, "POST", PREDICT, {**COUNT_TWO, "stream": "true"})
        assert status == 400 and "boolean" in reply["status"]["msg"]


def test_default_model_applies_when_none_is_named(configured) -> None:
    with configured('default_model = "identity_bytes"') as server:
        status, reply = call_json(server, "POST", PREDICT, {"str_data": "hello"})
        assert status == 200 and reply["str_data"] == "hello"
    with configured("") as server:  # no default: the request must name a model
        status, reply = call_json(server, "POST", PREDICT, {"str_data": "hello"})
        assert status == 400 and reply["status"]["status"] == "FAILURE"


def test_unknown_option_stops_start_up(configured) -> None:
    with pytest.raises(RuntimeError) as error:
        with configured("no_such_option = 1"):
            pass
    assert "no_such_option" in str(error.value)


@pytest.fixture
def flagged(repository):
    def start(*flags: str, env: dict[str, str] | None = None) -> ServerProcess:
        return ServerProcess("--model-repository", str(repository), *flags, env=env)

    return start


def test_default_model_as_a_flag(flagged) -> None:
    with flagged("--grps-default-model", "identity_bytes") as server:
        status, reply = call_json(server, "POST", PREDICT, {"str_data": "hello"})
        assert status == 200 and reply["str_data"] == "hello"


def test_options_as_variables_beat_the_config_file(flagged, tmp_path) -> None:
    config = write_config(tmp_path / "config.toml", 'default_model = "no_such_model"\nstart_online = true')
    env = {"MODELPLATFORM_GRPS_DEFAULT_MODEL": "identity_bytes", "MODELPLATFORM_GRPS_START_ONLINE": "false"}
    with flagged("--config", str(config), env=env) as server:
        assert call(server, "GET", "/grps/v1/health/ready")[0] == 503  # started offline
        status, reply = call_json(server, "POST", PREDICT, {"str_data": "hello"})
        assert status == 200 and reply["str_data"] == "hello"


def test_the_options_apply_with_one_transport_disabled(flagged) -> None:
    with flagged("--disable-plugin", "grps-rest", "--no-grps-start-online") as server:
        assert call(server, "GET", "/grps/v1/health/online")[0] == 404  # grps-rest is off
        assert call(server, "GET", "/v2/health/ready", content_type=None)[0] == 400  # offline drains


def test_a_flag_is_refused_when_both_transports_are_disabled(flagged) -> None:
    with pytest.raises(RuntimeError) as error:
        with flagged(
            "--disable-plugin", "grps-rest", "--disable-plugin", "grps-grpc", "--grps-default-model", "x"
        ):
            pass
    assert "--grps-default-model is an option of plugins 'grps-grpc' and 'grps-rest'" in str(error.value)


def test_a_bad_value_stops_start_up_naming_the_option(flagged) -> None:
    with pytest.raises(RuntimeError) as error:
        with flagged("--grps-streaming-ctrl-mode", "cookie"):
            pass
    assert "streaming_ctrl_mode must be one of" in str(error.value)


def test_the_dag_table_has_no_flag(flagged) -> None:
    with pytest.raises(RuntimeError) as error:
        with flagged("--grps-dag", "x"):
            pass
    assert "--grps-dag" in str(error.value)
