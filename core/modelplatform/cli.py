"""The ``platform`` command: serve, plugins, models, version (+ plugin commands).

``serve`` flags mirror ``tritonserver``'s where they overlap. A flag that is
not given leaves the setting to the config file, the environment or the
default, in that order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import config_reader, repository, settings as settings_module
from ._version import __version__
from .errors import ModelPlatformError
from .logging import configure
from .plugins import build_plugin_manager
from .settings import Settings

app = typer.Typer(
    name="platform",
    help="modelplatform: serve a model repository over every major inference protocol.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", help="TOML settings file (see docs/configuration.md).")
]
RepoOpt = Annotated[
    Optional[Path],
    typer.Option("--model-repository", "--model-store", help="Model repository folder."),
]
PluginsOpt = Annotated[
    Optional[str], typer.Option("--plugins", help="Comma-separated allow-list of plugin names.")
]
DisableOpt = Annotated[
    Optional[list[str]], typer.Option("--disable-plugin", help="Plugin name to block (repeatable).")
]


@app.command()
def serve(
    config: ConfigOpt = None,
    model_repository: RepoOpt = None,
    http_port: Annotated[Optional[int], typer.Option(help="HTTP port (every REST dialect).")] = None,
    grpc_port: Annotated[Optional[int], typer.Option(help="gRPC port (every gRPC service).")] = None,
    host: Annotated[Optional[str], typer.Option("--host", "--http-address", help="Address to bind.")] = None,
    plugins: PluginsOpt = None,
    disable_plugin: DisableOpt = None,
    model_control_mode: Annotated[
        Optional[str], typer.Option(help="none | poll | explicit (Triton's control modes).")
    ] = None,
    load_model: Annotated[
        Optional[list[str]], typer.Option(help="Model to load at start in explicit mode; '*' = all.")
    ] = None,
    repository_poll_secs: Annotated[
        Optional[float], typer.Option(help="Rescan interval in poll mode.")
    ] = None,
    allow_file_upload: Annotated[
        Optional[bool],
        typer.Option(
            "--allow-file-upload/--no-allow-file-upload",
            help="Accept file:<version>/<name> load parameters (clients can install code).",
        ),
    ] = None,
    repository_restrict: Annotated[
        Optional[str],
        typer.Option(help="'header:value' the repository API requires (403 / PERMISSION_DENIED)."),
    ] = None,
    strict_readiness: Annotated[
        Optional[bool],
        typer.Option("--strict-readiness/--no-strict-readiness", help="Ready only when all models are."),
    ] = None,
    log_verbose: Annotated[Optional[int], typer.Option(help="Verbosity; >0 logs debug events.")] = None,
    log_format: Annotated[Optional[str], typer.Option(help="console | json")] = None,
    max_request_bytes: Annotated[Optional[int], typer.Option(help="Largest request body.")] = None,
    max_tensor_elements: Annotated[Optional[int], typer.Option(help="Largest tensor element count.")] = None,
    max_bytes_element: Annotated[Optional[int], typer.Option(help="Largest BYTES element.")] = None,
    workers: Annotated[
        Optional[int], typer.Option(help="Server processes sharing the ports (SO_REUSEPORT).")
    ] = None,
    http_fast_lane: Annotated[
        Optional[bool],
        typer.Option(
            "--http-fast-lane/--no-http-fast-lane",
            help="C-parsed fast path for hot routes (OIP infer, TF Serving predict, grps predict).",
        ),
    ] = None,
    http_request_timeout_secs: Annotated[
        Optional[float],
        typer.Option(
            help="Most seconds a client may stay silent while sending a request (408); 0 = none.",
            rich_help_panel="Limits",
        ),
    ] = None,
    http_response_timeout_secs: Annotated[
        Optional[float],
        typer.Option(
            help="Most seconds to produce an HTTP answer, then the dialect's 504; 0 = none (default).",
            rich_help_panel="Limits",
        ),
    ] = None,
    http_keep_alive_timeout_secs: Annotated[
        Optional[float],
        typer.Option(help="Seconds an idle keep-alive connection stays open.", rich_help_panel="Network"),
    ] = None,
    drain_delay_secs: Annotated[
        Optional[float],
        typer.Option(
            help="On SIGTERM: seconds served with readiness already false (default 5).",
            rich_help_panel="Network",
        ),
    ] = None,
    exit_timeout_secs: Annotated[
        Optional[float],
        typer.Option(
            help="Then: seconds for calls in flight before they end UNAVAILABLE (default 30).",
            rich_help_panel="Network",
        ),
    ] = None,
) -> None:
    """Serve the model repository (HTTP 8000, gRPC 8001 by default)."""
    overrides = {
        "model_repository": model_repository,
        "http_port": http_port,
        "grpc_port": grpc_port,
        "host": host,
        "plugins": plugins,
        "disable_plugins": disable_plugin or None,
        "model_control_mode": model_control_mode,
        "load_models": load_model or None,
        "repository_poll_secs": repository_poll_secs,
        "allow_file_upload": allow_file_upload,
        "repository_restrict": repository_restrict,
        "strict_readiness": strict_readiness,
        "log_verbose": log_verbose,
        "log_format": log_format,
        "max_request_bytes": max_request_bytes,
        "max_tensor_elements": max_tensor_elements,
        "max_bytes_element": max_bytes_element,
        "http_fast_lane": http_fast_lane,
        "http_request_timeout_secs": http_request_timeout_secs,
        "http_response_timeout_secs": http_response_timeout_secs,
        "http_keep_alive_timeout_secs": http_keep_alive_timeout_secs,
        "workers": workers,
        "drain_delay_secs": drain_delay_secs,
        "exit_timeout_secs": exit_timeout_secs,
    }
    settings = _settings(config, overrides)
    configure(settings.log_verbose, settings.log_format)
    from .server import run

    run(settings)


@app.command("plugins")
def list_plugins(config: ConfigOpt = None, plugins: PluginsOpt = None, disable_plugin: DisableOpt = None) -> None:
    """List installed plugins: distribution, version, and whether they loaded (and why not)."""
    settings = _settings(config, {"plugins": plugins, "disable_plugins": disable_plugin or None})
    for info in build_plugin_manager(settings).infos:
        detail = f"  ({info.detail})" if info.detail else ""
        typer.echo(f"{info.name:16} {info.distribution:28} {info.version:10} {info.status}{detail}")


@app.command("models")
def list_models(config: ConfigOpt = None, model_repository: RepoOpt = None) -> None:
    """List what the model repository holds: name, versions, backend or platform."""
    settings = _settings(config, {"model_repository": model_repository})
    for name, entry in repository.scan(settings.model_repository).items():
        versions = ",".join(str(v) for v in entry.versions) or "-"
        typer.echo(f"{name:32} versions {versions:12} {_backend_of(entry.path)}")


@app.command()
def version() -> None:
    """Print the modelplatform version."""
    typer.echo(f"modelplatform {__version__}")


def _backend_of(model_dir: Path) -> str:
    try:
        proto = config_reader.load_file(model_dir)
    except ModelPlatformError as error:
        return f"invalid config: {error}"
    return proto.backend or proto.platform or "(from files)"


def _settings(config: Path | None, overrides: dict) -> Settings:
    try:
        return settings_module.resolve(config, overrides=overrides)
    except ModelPlatformError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


def _register_plugin_commands() -> None:
    try:
        plugin_set = build_plugin_manager(settings_module.resolve())
    except ModelPlatformError:
        return  # `platform plugins` reports the problem
    plugin_set.manager.hook.register_commands(cli=app)


def main() -> None:
    _register_plugin_commands()
    app()
