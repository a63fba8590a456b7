import os
import re
import signal
import subprocess
import sys

import pytest

from modelplatform.testing import free_port
from tests.conftest import MODEL_REPOSITORY, ROOT


def platform(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "modelplatform", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_version():
    result = platform("version")
    assert result.returncode == 0 and result.stdout.startswith("modelplatform 0.")


@pytest.mark.parametrize("command", ["serve", "plugins", "models", "version"])
def test_help_is_useful(command):
    result = platform(command, "--help")
    assert result.returncode == 0
    assert "Usage" in result.stdout


def test_serve_flags_mirror_tritonserver():
    text = platform("serve", "--help").stdout
    for flag in (
        "--model-repository",
        "--http-port",
        "--grpc-port",
        "--log-verbose",
        "--model-control-mode",
        "--load-model",
        "--strict-readiness",
    ):
        assert flag in text


def test_plugins_lists_distribution_version_and_status():
    lines = platform("plugins").stdout.splitlines()
    oip = next(line for line in lines if line.startswith("oip-rest"))
    assert "modelplatform-oip" in oip and "0.1.0" in oip and "loaded" in oip
    disabled = platform("plugins", env={"MODELPLATFORM_DISABLE_PLUGINS": "oip-rest"}).stdout
    assert "not enabled" in next(line for line in disabled.splitlines() if line.startswith("oip-rest"))


def test_models_lists_the_repository():
    out = platform("models", "--model-repository", str(MODEL_REPOSITORY)).stdout
    names = [line.split()[0] for line in out.splitlines()]
    for model in (
        "saved_model_half_plus_three",
        "simple",
        "simple_string",
        "identity_fp32",
        "identity_fp16",
        "identity_bytes",
    ):
        assert model in names
    assert "123" in next(line for line in out.splitlines() if line.startswith("saved_model"))


def test_bad_setting_exits_2_with_message():
    result = platform("serve", "--model-control-mode", "sometimes")
    assert result.returncode == 2 and "model_control_mode" in result.stderr


# ---- issue 13: small truths a new user trips on ----

PANELS = ("Network", "Models", "Limits", "Security", "Observability")


def _serve_options() -> list:
    import typer.main

    from modelplatform.composition.cli import app

    serve = typer.main.get_command(app).commands["serve"]
    return [param for param in serve.params if not getattr(param, "hidden", False)]


def _serve_until_it_exits(*args: str) -> tuple[int, str]:
    """Exit status and stderr; a server that starts instead is killed with its workers."""
    command = [
        sys.executable,
        "-m",
        "modelplatform",
        "serve",
        *args,
        "--http-port",
        str(free_port()),
        "--grpc-port",
        str(free_port()),
        "--metrics-port",
        str(free_port()),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT, start_new_session=True)  # fmt: skip
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("serve started instead of stopping at start")
    return process.returncode, stderr


@pytest.mark.parametrize("repository", ["no/such/repository", "s3://bucket/models", "README.md"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_repository_that_is_no_folder_stops_serve_with_one_line(repository, workers):
    returncode, stderr = _serve_until_it_exits("--model-repository", repository, "--workers", workers)
    assert returncode != 0
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and repository in lines[0], stderr


def test_models_names_a_missing_repository():
    result = platform("models", "--model-repository", "no/such/repository")
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.strip() == "error: model repository no/such/repository: does not exist"


def _imported(*args: str) -> set[str]:
    """Top-level packages a fresh ``platform <args>`` imports (from ``-X importtime``)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "modelplatform", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    names = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    return {name.split(".")[0] for name in names}


def _heavy(packages: set[str]) -> set[str]:
    return {p for p in packages if p.startswith("modelplatform_") or p in ("sanic", "grpc")}


@pytest.mark.parametrize("args", [("version",), ("--help",), ("models", "--help")])
def test_core_commands_import_no_plugin_and_no_transport(args):
    assert _heavy(_imported(*args)) == set()


def test_serve_help_loads_the_plugins_whose_options_it_lists():
    # Issue 27: plugins declare serve's options (register_options), so serve loads them first.
    assert {"modelplatform_metrics", "modelplatform_storage"} <= _heavy(_imported("serve", "--help"))


def test_the_import_check_sees_plugins_when_they_load():
    # `platform plugins` must import every plugin: proves _imported() can see them.
    assert {"modelplatform_oip", "grpc"} <= _heavy(_imported("plugins"))


def test_serve_options_use_the_fixed_panels():
    for param in _serve_options():
        assert getattr(param, "rich_help_panel", None) in (*PANELS, None), param.opts


@pytest.mark.parametrize("command", ["serve", "models", "plugins", "version"])
def test_help_reads_whole_in_80_columns(command):
    result = platform(command, "--help", env={"COLUMNS": "80", "TERM": "dumb", "NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert "…" not in result.stdout
    if command == "serve":
        for param in _serve_options():
            for name in (*param.opts, *param.secondary_opts):
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", result.stdout), name
        for title in PANELS:
            assert re.search(rf"─ {title} ─", result.stdout), title
