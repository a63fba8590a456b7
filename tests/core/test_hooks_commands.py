"""``register_commands``: an installed plugin's sub-command runs from the ``platform`` CLI.

The plugin is a module plus a ``.dist-info`` folder with its entry point, in a
private folder that only the subprocess sees on PYTHONPATH: the CLI finds it
through entry-point discovery alone, as it finds any third-party plugin.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = '''
import typer

from modelplatform import hookimpl


@hookimpl
def register_commands(cli: typer.Typer) -> None:
    @cli.command("greet")
    def greet(name: str = typer.Option("world", help="Whom to greet.")) -> None:
        """Say hello (a plugin's command)."""
        typer.echo(f"hello {name}, from a plugin")
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("commands_plugin")
    (site / "greeting_plugin.py").write_text(PLUGIN)
    info = site / "modelplatform_greeting-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: modelplatform-greeting\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[modelplatform]\ngreeting = greeting_plugin\n")
    return site


def _platform(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "200", **env}
    return subprocess.run([sys.executable, "-m", "modelplatform", *args], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.mark.hook("register_commands")
def test_a_plugin_command_runs(site):
    result = _platform(site, "greet", "--name", "operator")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello operator, from a plugin\n"
    assert "Whom to greet" in _platform(site, "greet", "--help").stdout


@pytest.mark.hook("register_commands")
def test_platform_plugins_names_the_commands_a_plugin_adds(site):
    # `platform --help` imports no plugin (issue 13), so `platform plugins` is where they show.
    listing = _platform(site, "plugins").stdout.splitlines()
    greeting = next(line for line in listing if line.startswith("greeting"))
    assert "loaded" in greeting and "commands: greet" in greeting
    assert "platform plugins" in _platform(site, "--help").stdout


@pytest.mark.hook("register_commands")
def test_a_blocked_plugin_adds_no_command(site):
    result = _platform(site, "greet", MODELPLATFORM_DISABLE_PLUGINS="greeting")
    assert result.returncode != 0 and "hello" not in result.stdout
    listing = _platform(site, "plugins", MODELPLATFORM_DISABLE_PLUGINS="greeting").stdout
    assert "commands:" not in next(line for line in listing.splitlines() if line.startswith("greeting"))
