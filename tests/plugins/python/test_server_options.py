"""The python plugin's options as a flag and as a variable, each on a real server.

The config file's ``[plugins.python]`` table is covered by test_process_faults.py;
here the same declaration (limits.OPTIONS) is given as ``--python-execute-timeout-secs``
and as ``MODELPLATFORM_PYTHON_EXECUTE_TIMEOUT_SECS``, and a bad value stops start-up.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from modelplatform.testing import ServerProcess

from .test_process_faults import HANGS, PROCESS, SLACK_S, infer, write_model


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("python-options")
    write_model(root, "hangs", HANGS, 1, PROCESS)  # no parameter of its own: the server default bounds it
    return root


def serve(repository: Path, *flags: str, env: dict[str, str] | None = None) -> ServerProcess:
    return ServerProcess("--model-repository", str(repository), *flags, env=env, timeout=180)


def assert_bounded(server: ServerProcess, seconds: float) -> None:
    started = time.monotonic()
    status, body = infer(server, "hangs", 3.0)
    took = time.monotonic() - started
    assert status == 500 and seconds - 0.5 < took < seconds + SLACK_S, (status, took)
    assert body["error"] == (
        f"model 'hangs' instance 0: its process did not answer within {seconds:g} s "
        "(python.execute_timeout_secs) and was killed"
    )
    assert infer(server, "hangs", 1.0)[0] == 200  # the fresh child serves


def test_the_flag_bounds_a_process_instance_call(repository: Path) -> None:
    with serve(repository, "--python-execute-timeout-secs", "1.5") as server:
        assert_bounded(server, 1.5)


def test_the_variable_beats_the_config_file(repository: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[plugins.python]\nexecute_timeout_secs = 600\n")
    env = {"MODELPLATFORM_PYTHON_EXECUTE_TIMEOUT_SECS": "2"}
    with serve(repository, "--config", str(config), env=env) as server:
        assert_bounded(server, 2.0)


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--python-execute-timeout-secs", "-1", "execute_timeout_secs must be 0 (no timeout) or more"),
        ("--python-max-memory-mib", "1.5", "max_memory_mib must be 0 (no bound) or a whole number of MiB"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_option(
    repository: Path, flag: str, value: str, words: str
) -> None:
    with pytest.raises(RuntimeError) as raised:
        with serve(repository, flag, value):
            pass
    assert words in str(raised.value)
