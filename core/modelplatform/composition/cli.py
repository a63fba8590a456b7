"""The ``platform`` command: serve, plugins, models, version (+ plugin commands).

``serve`` flags mirror ``tritonserver``'s where they overlap. A flag that is
not given leaves the setting to the config file, the environment or the
default, in that order.
"""

from __future__ import annotations

import contextlib
import inspect
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import pluggy
import structlog
import typer

from modelplatform._version import __version__
from modelplatform.base import config_reader
from modelplatform.base import settings as settings_module
from modelplatform.base.core_options import CORE_OPTIONS, MODELS
from modelplatform.base.errors import ModelPlatformError
from modelplatform.base.logging import configure
from modelplatform.base.options import Declared, Option
from modelplatform.base.resolution import Warn
from modelplatform.base.settings import Settings
from modelplatform.composition import options
from modelplatform.composition.cli_help import PanelledCommand
from modelplatform.composition.model_folder import as_repository
from modelplatform.composition.plugins import build_plugin_manager
from modelplatform.models import repository
from modelplatform.models.remote_repository import RepositorySource, open_repository

if TYPE_CHECKING:
    from modelplatform.composition.security import Security

log = structlog.get_logger("modelplatform.composition.cli")

app = typer.Typer(
    name="platform",
    help="modelplatform: serve a model repository over every major inference protocol.",
    epilog="Plugins may add commands: `platform plugins` lists them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

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

#: A flag's value type as typer reads it (not given: None); a list is a repeatable flag.
_FLAG_TYPES: dict[type, Any] = {bool: Optional[bool], int: Optional[int], float: Optional[float]}  # noqa: UP045 - typer reads these at run time


def _flag_type(option: Option) -> Any:
    if option.type is tuple:
        return Optional[list[str]] if option.repeatable else Optional[str]  # noqa: UP045 - as above
    return _FLAG_TYPES.get(option.type, Optional[str])  # noqa: UP045 - as above


def _flag_parameter(declared: Declared) -> inspect.Parameter:
    """One ``serve`` parameter, as typer reads it from a signature, from one declaration."""
    option = declared.option
    names = list(declared.flags)
    if option.type is bool:
        names[0] = f"{names[0]}/--no-{names[0][2:]}"
    info = typer.Option(*names, help=option.help, metavar=option.metavar, rich_help_panel=declared.panel)
    annotation = Annotated[_flag_type(option), info]  # type: ignore[valid-type]  # built at run time for typer
    return inspect.Parameter(
        declared.dest, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
    )


def declare_serve_options(plugin_options: Sequence[Declared] = ()) -> None:
    """Give ``serve`` a parameter per declared option: the core's, then the installed plugins'.

    typer builds the command from the function's signature when the CLI runs,
    so :func:`main` calls this again with the plugins' options before it does.
    """
    config = inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOpt)
    flags = [_flag_parameter(d) for d in (*CORE_OPTIONS, *plugin_options) if d.option.cli]
    serve.__signature__ = inspect.Signature([config, *flags])  # type: ignore[attr-defined]  # typer reads it
    serve.__annotations__ = {p.name: p.annotation for p in (config, *flags)}


@app.command(cls=PanelledCommand)
def serve(config: Path | None = None, **flags: Any) -> None:
    """Serve the model repository (HTTP 8000, gRPC 8001 by default)."""
    _serve(config, **flags)


def _serve(config: Path | None, **flags: Any) -> None:
    overrides = {dest: value or None if isinstance(value, list) else value for dest, value in flags.items()}
    passed_over: list[tuple[str, dict[str, str]]] = []
    settings = _settings(config, overrides, lambda event, fields: passed_over.append((event, fields)))
    security = _read_security(settings)
    configure(settings.log_verbose, settings.log_format)
    for event, fields in passed_over:
        log.warning(event, **fields)
    from modelplatform.base.allocator import tune_allocator
    from modelplatform.composition.server import run

    tune_allocator()  # before any thread or worker exists (allocator.py says why)
    settings, remote = _opened(settings)  # a remote repository's client may start threads
    _require_repository(settings, flags.get("model_repository"))
    try:
        with as_repository(settings) as served:  # a model base path: that one model
            run(served, remote, security if settings.workers == 1 else None)
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


def _settings(config: Path | None, overrides: dict[str, Any], warn: Warn | None = None) -> Settings:
    try:
        return options.resolve(config, overrides=overrides, warn=warn)
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


def _read_security(settings: Settings) -> Security:
    """The TLS and key files, read once; one line and exit 2 when one does not parse or match."""
    from modelplatform.composition.security import Security  # loads the front ends

    try:
        return Security.read(settings)
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
    word = _first_word(args)
    return word is not None and word not in _command_names(app)


declare_serve_options()


def _first_word(args: list[str]) -> str | None:
    return next((arg for arg in args if not arg.startswith("-")), None)


def main() -> None:
    # Plugins load (with sanic, grpc, onnxruntime...) only for a command they may add, and for
    # the commands that resolve settings (`serve`, `plugins`, `models`: their options may be in
    # the config file): `platform version` and `platform --help` start without them.
    if _first_word(sys.argv[1:]) == "serve":
        declare_serve_options(_installed_options())
    elif _asks_for_plugin_command(sys.argv[1:]):
        _register_plugin_commands()
    app()


def _installed_options() -> tuple[Declared, ...]:
    try:
        return options.installed_options()
    except ModelPlatformError as error:  # two plugins declare one flag: nothing can be parsed
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
