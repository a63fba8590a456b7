"""The ``platform`` command: serve, plugins, models, version (+ plugin commands).

``serve`` flags mirror ``tritonserver``'s where they overlap. A flag that is
not given leaves the setting to the config file, the environment or the
default, in that order.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import pluggy
import typer

from modelplatform._version import __version__
from modelplatform.base import config_reader
from modelplatform.base import settings as settings_module
from modelplatform.base.errors import ModelPlatformError
from modelplatform.base.logging import configure
from modelplatform.base.settings import Settings
from modelplatform.composition.cli_help import PanelledCommand
from modelplatform.composition.plugins import build_plugin_manager
from modelplatform.models import repository
from modelplatform.models.remote_repository import RepositorySource, open_repository

app = typer.Typer(
    name="platform",
    help="modelplatform: serve a model repository over every major inference protocol.",
    epilog="Plugins may add commands: `platform plugins` lists them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: The panels ``serve --help`` groups its options in (options without one go to "Options").
NETWORK, MODELS, LIMITS = "Network", "Models", "Limits"
SECURITY, OBSERVABILITY = "Security", "Observability"

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="TOML settings file (see docs/configuration.md).")
]
RepoOpt = Annotated[
    str | None,  # not Path, which would turn a mistaken s3://bucket into s3:/bucket
    typer.Option(
        "--model-repository",
        "--model-store",
        metavar="<path>",
        help="Model repository: a folder, or s3://, gs://, as:// (the storage plugin).",
        rich_help_panel=MODELS,
    ),
]
PluginsOpt = Annotated[
    str | None, typer.Option("--plugins", help="Comma-separated allow-list of plugin names.")
]
DisableOpt = Annotated[
    list[str] | None,
    typer.Option("--disable-plugin", metavar="<name>", help="Plugin name to block (repeatable)."),
]


def _tls_switch(listener: str, mutual: bool) -> typer.models.OptionInfo:
    flag = f"--{listener}-use-ssl" + ("-mutual" if mutual else "")
    port = {"http": "HTTP", "grpc": "gRPC"}.get(listener, listener)
    what = f"TLS on the {port} port"
    if mutual:
        what = f"mutual {what}: clients need a certificate of the root cert"
    follows = " (default: as HTTP)" if listener == "metrics" else ""
    return typer.Option(f"{flag}/--no-{flag[2:]}", help=f"Serve {what}{follows}.", rich_help_panel=SECURITY)


def _tls_file(listener: str, name: str, what: str) -> typer.models.OptionInfo:
    follows = " (default: the HTTP one)" if listener == "metrics" else ""
    return typer.Option(
        f"--{listener}-{name}", metavar="<pem>", help=f"{what}{follows}.", rich_help_panel=SECURITY
    )


def _tls_options(listener: str) -> dict[str, typer.models.OptionInfo]:
    return {
        "use_ssl": _tls_switch(listener, False),
        "use_ssl_mutual": _tls_switch(listener, True),
        "server_cert": _tls_file(
            listener, "server-cert", "Certificate (chain), PEM; re-read on change or SIGHUP"
        ),
        "server_key": _tls_file(listener, "server-key", "Private key, PEM"),
        "root_cert": _tls_file(listener, "root-cert", "CA certificate(s) of the clients (mutual TLS)"),
    }


_GRPC_TLS, _HTTP_TLS, _METRICS_TLS = (_tls_options(listener) for listener in ("grpc", "http", "metrics"))
TlsSwitch = Optional[bool]  # noqa: UP045 - typer reads these aliases at run time
TlsFile = Optional[str]  # noqa: UP045 - typer reads these aliases at run time


@app.command(cls=PanelledCommand)
def serve(
    config: ConfigOpt = None,
    plugins: PluginsOpt = None,
    disable_plugin: DisableOpt = None,
    model_repository: RepoOpt = None,
    model_control_mode: Annotated[
        str | None,
        typer.Option(help="none | poll | explicit (as Triton).", rich_help_panel=MODELS),
    ] = None,
    load_model: Annotated[
        list[str] | None,
        typer.Option(metavar="<model>", help="Model to load at start; '*': all.", rich_help_panel=MODELS),
    ] = None,
    repository_poll_secs: Annotated[
        float | None, typer.Option(help="Rescan interval in poll mode.", rich_help_panel=MODELS)
    ] = None,
    strict_readiness: Annotated[
        bool | None,
        typer.Option(
            "--strict-readiness/--no-strict-readiness",
            help="Ready only when all models are.",
            rich_help_panel=MODELS,
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option("--host", "--http-address", help="Address to bind.", rich_help_panel=NETWORK),
    ] = None,
    http_port: Annotated[
        int | None, typer.Option(help="HTTP port (every REST dialect).", rich_help_panel=NETWORK)
    ] = None,
    grpc_port: Annotated[
        int | None, typer.Option(help="gRPC port (every gRPC service).", rich_help_panel=NETWORK)
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Server processes sharing the ports.", rich_help_panel=NETWORK),
    ] = None,
    http_fast_lane: Annotated[
        bool | None,
        typer.Option(
            "--http-fast-lane/--no-http-fast-lane",
            help="C-parsed fast path for hot routes.",
            rich_help_panel=NETWORK,
        ),
    ] = None,
    single_port: Annotated[
        bool | None,
        typer.Option(
            "--single-port/--no-single-port",
            help="HTTP and gRPC (h2c) both on the HTTP port; no gRPC port.",
            rich_help_panel=NETWORK,
        ),
    ] = None,
    max_request_bytes: Annotated[
        int | None, typer.Option(help="Largest request body.", rich_help_panel=LIMITS)
    ] = None,
    max_tensor_elements: Annotated[
        int | None, typer.Option(help="Largest tensor element count.", rich_help_panel=LIMITS)
    ] = None,
    max_bytes_element: Annotated[
        int | None, typer.Option(help="Largest BYTES element.", rich_help_panel=LIMITS)
    ] = None,
    allow_file_upload: Annotated[
        bool | None,
        typer.Option(
            "--allow-file-upload/--no-allow-file-upload",
            help="Accept model files in load requests.",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    allow_client_shm: Annotated[
        bool | None,
        typer.Option(
            "--allow-client-shm/--no-allow-client-shm",
            help="Let clients register shared-memory regions (default off).",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    max_shm_regions: Annotated[
        int | None,
        typer.Option(
            help="Most shared-memory regions registered at once (default 64).", rich_help_panel=LIMITS
        ),
    ] = None,
    repository_restrict: Annotated[
        str | None,
        typer.Option(
            help="'header:value' the repository API needs (short for model-repository:header=value "
            "on both restricted lists).",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    http_restricted_api: Annotated[
        list[str] | None,
        typer.Option(
            metavar="<apis>:<k>=<v>",
            help="APIs (a,b,...) that need HTTP header <k>: <v> (repeatable; Triton's syntax).",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    grpc_restricted_protocol: Annotated[
        list[str] | None,
        typer.Option(
            metavar="<apis>:<k>=<v>",
            help="APIs that need gRPC metadata triton-grpc-protocol-<k>: <v> (repeatable).",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    api_keys_file: Annotated[
        str | None,
        typer.Option(
            help="TOML/JSON file of scoped API keys (hashes); re-read when it changes.",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    api_keys_open_health: Annotated[
        bool | None,
        typer.Option(
            "--api-keys-open-health/--no-api-keys-open-health",
            help="With API keys, health endpoints need none (default: open, for probes).",
            rich_help_panel=SECURITY,
        ),
    ] = None,
    log_verbose: Annotated[
        int | None, typer.Option(help=">0 logs debug events.", rich_help_panel=OBSERVABILITY)
    ] = None,
    log_format: Annotated[
        str | None, typer.Option(help="console | json", rich_help_panel=OBSERVABILITY)
    ] = None,
    http_request_timeout_secs: Annotated[
        float | None,
        typer.Option(
            help="Most seconds a client may stay silent while sending a request (408); 0 = none.",
            rich_help_panel=LIMITS,
        ),
    ] = None,
    http_response_timeout_secs: Annotated[
        float | None,
        typer.Option(
            help="Most seconds to produce an HTTP answer, then the dialect's 504; 0 = none (default).",
            rich_help_panel=LIMITS,
        ),
    ] = None,
    http_keep_alive_timeout_secs: Annotated[
        float | None,
        typer.Option(help="Seconds an idle keep-alive connection stays open.", rich_help_panel=NETWORK),
    ] = None,
    drain_delay_secs: Annotated[
        float | None,
        typer.Option(
            help="On SIGTERM: seconds served with readiness already false (default 5).",
            rich_help_panel=NETWORK,
        ),
    ] = None,
    exit_timeout_secs: Annotated[
        float | None,
        typer.Option(
            help="Then: seconds for calls in flight before they end UNAVAILABLE (default 30).",
            rich_help_panel=NETWORK,
        ),
    ] = None,
    allow_metrics: Annotated[
        bool | None,
        typer.Option(
            "--allow-metrics/--no-allow-metrics",
            help="Serve Prometheus metrics on the metrics port and at /metrics (default on).",
            rich_help_panel=OBSERVABILITY,
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Metrics port (default 8002).", rich_help_panel=OBSERVABILITY),
    ] = None,
    metrics_address: Annotated[
        str | None,
        typer.Option(
            help="Address of the metrics port (default: the HTTP address).",
            rich_help_panel=OBSERVABILITY,
        ),
    ] = None,
    metrics_interval_ms: Annotated[
        int | None,
        typer.Option(
            help="How often CPU, memory and GPU gauges are sampled (default 2000).",
            rich_help_panel=OBSERVABILITY,
        ),
    ] = None,
    metrics_config: Annotated[
        list[str] | None,
        typer.Option(
            metavar="<key=value>",
            help="Metrics option, e.g. counter_latencies=false (repeatable).",
            rich_help_panel=OBSERVABILITY,
        ),
    ] = None,
    trace_otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            help="Send OpenTelemetry spans to this OTLP/HTTP endpoint (default: no tracing).",
            rich_help_panel=OBSERVABILITY,
        ),
    ] = None,
    trace_rate: Annotated[
        int | None,
        typer.Option(
            help="Trace one request in every N (default 1000); sampled traceparents always.",
            rich_help_panel=OBSERVABILITY,
        ),
    ] = None,
    grpc_use_ssl: Annotated[TlsSwitch, _GRPC_TLS["use_ssl"]] = None,
    grpc_use_ssl_mutual: Annotated[TlsSwitch, _GRPC_TLS["use_ssl_mutual"]] = None,
    grpc_server_cert: Annotated[TlsFile, _GRPC_TLS["server_cert"]] = None,
    grpc_server_key: Annotated[TlsFile, _GRPC_TLS["server_key"]] = None,
    grpc_root_cert: Annotated[TlsFile, _GRPC_TLS["root_cert"]] = None,
    http_use_ssl: Annotated[TlsSwitch, _HTTP_TLS["use_ssl"]] = None,
    http_use_ssl_mutual: Annotated[TlsSwitch, _HTTP_TLS["use_ssl_mutual"]] = None,
    http_server_cert: Annotated[TlsFile, _HTTP_TLS["server_cert"]] = None,
    http_server_key: Annotated[TlsFile, _HTTP_TLS["server_key"]] = None,
    http_root_cert: Annotated[TlsFile, _HTTP_TLS["root_cert"]] = None,
    metrics_use_ssl: Annotated[TlsSwitch, _METRICS_TLS["use_ssl"]] = None,
    metrics_use_ssl_mutual: Annotated[TlsSwitch, _METRICS_TLS["use_ssl_mutual"]] = None,
    metrics_server_cert: Annotated[TlsFile, _METRICS_TLS["server_cert"]] = None,
    metrics_server_key: Annotated[TlsFile, _METRICS_TLS["server_key"]] = None,
    metrics_root_cert: Annotated[TlsFile, _METRICS_TLS["root_cert"]] = None,
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
        "http_restricted_api": http_restricted_api or None,
        "grpc_restricted_protocol": grpc_restricted_protocol or None,
        "api_keys_file": api_keys_file,
        "api_keys_open_health": api_keys_open_health,
        "allow_client_shm": allow_client_shm,
        "max_shm_regions": max_shm_regions,
        "strict_readiness": strict_readiness,
        "log_verbose": log_verbose,
        "log_format": log_format,
        "max_request_bytes": max_request_bytes,
        "max_tensor_elements": max_tensor_elements,
        "max_bytes_element": max_bytes_element,
        "http_fast_lane": http_fast_lane,
        "single_port": single_port,
        "http_request_timeout_secs": http_request_timeout_secs,
        "http_response_timeout_secs": http_response_timeout_secs,
        "http_keep_alive_timeout_secs": http_keep_alive_timeout_secs,
        "workers": workers,
        "drain_delay_secs": drain_delay_secs,
        "exit_timeout_secs": exit_timeout_secs,
        "allow_metrics": allow_metrics,
        "metrics_port": metrics_port,
        "metrics_address": metrics_address,
        "metrics_interval_ms": metrics_interval_ms,
        "metrics_config": metrics_config or None,
        "trace_otlp_endpoint": trace_otlp_endpoint,
        "trace_rate": trace_rate,
        "grpc_use_ssl": grpc_use_ssl,
        "grpc_use_ssl_mutual": grpc_use_ssl_mutual,
        "grpc_server_cert": grpc_server_cert,
        "grpc_server_key": grpc_server_key,
        "grpc_root_cert": grpc_root_cert,
        "http_use_ssl": http_use_ssl,
        "http_use_ssl_mutual": http_use_ssl_mutual,
        "http_server_cert": http_server_cert,
        "http_server_key": http_server_key,
        "http_root_cert": http_root_cert,
        "metrics_use_ssl": metrics_use_ssl,
        "metrics_use_ssl_mutual": metrics_use_ssl_mutual,
        "metrics_server_cert": metrics_server_cert,
        "metrics_server_key": metrics_server_key,
        "metrics_root_cert": metrics_root_cert,
    }
    settings = _settings(config, overrides)
    _require_usable_tls(settings)
    configure(settings.log_verbose, settings.log_format)
    from modelplatform.base.allocator import tune_allocator
    from modelplatform.composition.server import run

    tune_allocator()  # before any thread or worker exists (allocator.py says why)
    settings, remote = _opened(settings)  # a remote repository's client may start threads
    _require_repository(settings, model_repository)
    try:
        run(settings, remote)
    finally:
        if remote is not None:
            remote.close()


@app.command("plugins", cls=PanelledCommand)
def list_plugins(
    config: ConfigOpt = None, plugins: PluginsOpt = None, disable_plugin: DisableOpt = None
) -> None:
    """List installed plugins: distribution, version, and whether they loaded (and why not)."""
    settings = _settings(config, {"plugins": plugins, "disable_plugins": disable_plugin or None})
    plugin_set = build_plugin_manager(settings)
    commands = _commands_by_plugin(plugin_set.manager)
    for info in plugin_set.infos:
        detail = f"  ({info.detail})" if info.detail else ""
        added = f"  commands: {', '.join(commands[info.name])}" if commands.get(info.name) else ""
        typer.echo(f"{info.name:16} {info.distribution:28} {info.version:10} {info.status}{detail}{added}")


@app.command("models", cls=PanelledCommand)
def list_models(config: ConfigOpt = None, model_repository: RepoOpt = None) -> None:
    """List what the model repository holds: name, versions, backend or platform."""
    settings = _settings(config, {"model_repository": model_repository})
    configure(settings.log_verbose, settings.log_format)  # a mirror's events go to stderr
    settings, remote = _opened(settings)
    _require_repository(settings, model_repository)
    try:
        for name, entry in repository.scan(settings.model_repository).items():
            versions = ",".join(str(v) for v in entry.versions) or "-"
            typer.echo(f"{name:32} versions {versions:12} {_backend_of(entry.path)}")
    finally:
        if remote is not None:
            remote.close()


@app.command(cls=PanelledCommand)
def version() -> None:
    """Print the modelplatform version."""
    typer.echo(f"modelplatform {__version__}")


def _backend_of(model_dir: Path) -> str:
    try:
        proto = config_reader.load_file(model_dir)
    except ModelPlatformError as error:
        return f"invalid config: {error}"
    return proto.backend or proto.platform or "(from files)"


def _settings(config: Path | None, overrides: dict[str, Any]) -> Settings:
    try:
        return settings_module.resolve(config, overrides=overrides)
    except ModelPlatformError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


def _opened(settings: Settings) -> tuple[Settings, RepositorySource | None]:
    """A URL repository mirrored by a plugin; one line and exit 2 when it cannot be read."""
    location = settings.model_repository_url
    if not location:
        return settings, None
    try:
        with _sigterm_unwinds():
            return open_repository(settings, build_plugin_manager(settings).manager.hook)
    except ModelPlatformError as error:
        said = str(error) if location in str(error) else f"{location}: {error}"
        typer.echo(f"error: model repository {said}", err=True)
        raise typer.Exit(2) from None


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM while a mirror downloads exits through ``finally`` blocks (a temporary mirror
    is removed); the server installs its own drain handler later."""

    def unwind(number: int, frame: object) -> None:
        raise SystemExit(128 + number)

    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _require_repository(settings: Settings, as_given: str | None) -> None:
    """Stop with one line when the repository is no local folder (as Triton does).

    Serving on would report READY with no models: a typo'd path would look
    like a healthy empty server.
    """
    root = settings.model_repository
    if root.is_dir():
        return
    shown = as_given or str(root)
    if root.exists():
        reason = "is not a folder"
    else:
        reason = "does not exist"
    typer.echo(f"error: model repository {shown}: {reason}", err=True)
    raise typer.Exit(2)


def _require_usable_tls(settings: Settings) -> None:
    """Stop with one line when a certificate, key or root file does not parse or match (exit 2)."""
    from modelplatform.frontends.tls import ServerTls

    try:
        ServerTls.from_settings(settings)
    except ModelPlatformError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


def _register_plugin_commands() -> None:
    try:
        plugin_set = build_plugin_manager(settings_module.resolve())
    except ModelPlatformError:
        return  # `platform plugins` reports the problem
    plugin_set.manager.hook.register_commands(cli=app)


def _commands_by_plugin(manager: pluggy.PluginManager) -> dict[str, list[str]]:
    """The sub-commands each plugin adds, found by letting it register on a scratch CLI."""
    found: dict[str, list[str]] = {}
    for impl in manager.hook.register_commands.get_hookimpls():
        scratch = typer.Typer()
        try:
            impl.function(**{name: scratch for name in impl.argnames})
        except Exception:  # noqa: BLE001 - listing plugins must survive a broken one
            continue
        found[impl.plugin_name] = _command_names(scratch)
    return found


def _command_names(cli: typer.Typer) -> list[str]:
    """Names as typer gives them: the explicit name, else the function's, dashed."""
    commands = [c.name or c.callback.__name__.replace("_", "-")
                for c in cli.registered_commands if c.callback]  # fmt: skip
    return commands + [g.name for g in cli.registered_groups if g.name]


def _asks_for_plugin_command(args: list[str]) -> bool:
    """Whether the first word names no core command (only then are plugins imported)."""
    word = next((arg for arg in args if not arg.startswith("-")), None)
    return word is not None and word not in _command_names(app)


def main() -> None:
    # Plugins load (with sanic, grpc, onnxruntime...) only for a command they may add:
    # `platform version`, `platform --help` and every core command start without them.
    if _asks_for_plugin_command(sys.argv[1:]):
        _register_plugin_commands()
    app()
