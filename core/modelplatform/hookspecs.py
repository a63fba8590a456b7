"""Every hook a modelplatform plugin can implement: the plugin author's reference.

A plugin is a distribution with an entry point in the ``modelplatform`` group
whose object is a module (or class) holding ``@hookimpl`` functions::

    [project.entry-points.modelplatform]
    my-protocol = "my_package.plugin"

All hooks run at start-up, shutdown or a model load, never per request. ``register_*``
hooks return declarations (classes or frozen objects); the core collects the
results of every plugin, validates them once, rejects duplicates naming both
providers, and freezes them into plain dicts the request path reads.
Hook specs may gain arguments over time, never lose them: implement only the
arguments you use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import typer

    from modelplatform.base.codecs import Codec
    from modelplatform.base.inference import InferenceRequest
    from modelplatform.base.model_config import ModelConfig
    from modelplatform.base.options import Option
    from modelplatform.base.settings import Settings
    from modelplatform.dataplane.context import ServerContext
    from modelplatform.dataplane.declarations import GrpcService, HttpDialect
    from modelplatform.models.backend import Backend
    from modelplatform.models.remote_repository import RepositorySource

PROJECT = "modelplatform"
hookspec = pluggy.HookspecMarker(PROJECT)


# ---- Registration: called once while the server is composed; results collected ----


@hookspec
def register_options() -> Sequence[Option]:
    """Return the plugin's option declarations (``Option``), like pytest's ``pytest_addoption``.

    Called before the command line is parsed, for every installed plugin
    (enabled or not: ``serve --help`` lists them all, in a panel per plugin);
    results collected. Each option becomes a ``platform serve`` flag
    (``--<plugin>-<name>``), a variable (``MODELPLATFORM_<PLUGIN>_<NAME>``) and
    a config key (``[plugins.<plugin>] <name>``), resolved with the core's
    precedence (defaults < file < environment < flags); ``top_level=True``
    keeps an older un-namespaced name, ``table`` a namespace several entry points
    share (each declares the same options), and a ``dict`` option (``cli=False``)
    is a config table only. The plugin reads the values with
    ``settings.options_for("<plugin>")``: every declared option, defaults filled
    in, checked. A flag of a disabled plugin is refused naming it; its variables
    and keys are passed over with a warning. Two options with one flag,
    variable or key stop start-up naming both plugins.
    """


@hookspec
def register_backends(settings: Settings) -> Sequence[type[Backend]]:
    """Return the Backend subclasses this plugin provides.

    Called once at start-up; every plugin's list is collected. Each class has a
    unique ``kind`` (matched against a model's ``backend``), optional
    ``platforms`` (matched against ``platform``) and ``model_files`` (used when
    a model names neither). Return an empty list to provide nothing.
    """


@hookspec
def register_codecs(settings: Settings) -> Sequence[Codec]:
    """Return Codec instances: wire encodings that a dialect chooses between.

    Called once at start-up; results collected. ``(dialect, name)`` must be
    unique. A codec's ``extensions`` are advertised in server metadata while
    the plugin is loaded.
    """


@hookspec
def register_http_dialects(settings: Settings) -> Sequence[HttpDialect]:
    """Return HttpDialect declarations: a name, a route factory and an error renderer.

    Called once at start-up; results collected. ``routes(context)`` returns the
    dialect's HttpRoute declarations (each route once: method, path template,
    handler, body policy, hot or not); the core serves them all on the one HTTP
    port, and the hot ones on its fast lane too. Dialect names must be unique;
    a route declared by two dialects, or one that hides another dialect's
    route, stops start-up naming both. A route's optional ``doc`` (RouteDoc)
    and the dialect's ``error_schema`` are what the OpenAPI documents say of
    it; ``ServerContext.routes_of(name)`` hands every dialect's routes to
    whoever describes them (the openapi plugin).
    """


@hookspec
def register_grpc_services(settings: Settings) -> Sequence[GrpcService]:
    """Return GrpcService declarations, added to the one gRPC server.

    Called once at start-up; results collected. Several declarations may
    serve methods of the same gRPC service name, each through its own
    generic handler (the repository plugin adds ``Repository*`` RPCs to
    ``inference.GRPCInferenceService`` this way). A service whose messages
    live in a private descriptor pool names it (``descriptor_pool``), so gRPC
    server reflection describes it from there.
    """


@hookspec
def register_commands(cli: typer.Typer) -> None:
    """Add sub-commands to the ``platform`` CLI (``cli.command()(fn)``).

    Called once, for every plugin, when the first word of the command line
    names no core command (``version`` and ``--help`` import no plugin);
    ``platform plugins`` lists what each plugin adds. Return nothing.
    """


# ---- Repository: called once before the server is composed; the first answer wins ----


@hookspec(firstresult=True)
def open_repository(location: str, settings: Settings) -> RepositorySource | None:
    """Open a model repository given as a URL (``s3://``, ``gs://``, ``as://``...).

    Called once at start-up, before models load, when ``--model-repository``
    is a URL; ``location`` is the URL exactly as given. Return None for a
    scheme this plugin does not serve; the first plugin returning a source
    answers. The source mirrors the remote repository into a local folder
    (its ``local_root``, mirrored before returning), which the core scans and
    loads from; the core calls ``fetch_model(name)`` before an explicit load
    of ``name``, ``refresh()`` before each poll scan, ``model_names()`` for
    each repository index call (one bounded listing; waited for at most
    ``LISTING_TIMEOUT_S``) and ``close()`` at exit, in a worker thread. Raise ``ModelPlatformError`` with one line naming the
    URL when it cannot be read (wrong credential, missing bucket, unreachable
    endpoint): the server stops at start with that line and exit code 2.
    Under ``--workers N`` it is called again in every worker, whose
    ``settings.model_repository`` names the mirror the first call made:
    attach to that folder (shared by the processes; not deleted by workers).
    """


# ---- Models: called while a model version loads; the first answer wins ----


@hookspec(firstresult=True)
def warmup_requests(
    model_name: str,
    version: int,
    version_dir: Path,
    config: ModelConfig,
) -> Sequence[InferenceRequest] | None:
    """Return warmup requests read from a version folder in a format this plugin knows.

    Called in a worker thread while ``model_name`` version ``version`` loads,
    after its instances loaded and before it turns READY; ``config`` is the
    configuration its backend completed. Return None when the folder holds
    nothing of yours: the first plugin returning a sequence answers (one
    format per folder). Every instance runs the requests once, in order,
    after the config's ``model_warmup`` samples; ``id`` names a request in a
    failure's reason. Raise ``ModelPlatformError`` to fail the load with
    that reason (a bad warmup file fails the model, as it does in TF Serving).
    """


# ---- Per-server set-up: called once the server is composed ----


@hookspec
def configure(server: ServerContext) -> None:
    """Run once per server, after every plugin's declarations are frozen into
    ``server`` and before any port opens or any model loads.

    Set up here what belongs to this one server and must be in place before
    models load: per-server core settings (the metrics plugin gives the
    server its latency histogram bounds through
    ``modelplatform.statistics.set_latency_buckets(server, ...)``), or this
    plugin's own per-server objects through ``server.shared(kind, factory)``.
    Called synchronously (a returned value is not awaited): create no
    loop-bound objects here (``startup`` is for those). A failure stops the
    server from starting.
    Two servers in one process each get their own call with their own context.
    """


# ---- Lifecycle: called inside the running event loop; results collected ----


@hookspec
def startup(server: ServerContext) -> Awaitable[Any] | None:
    """Run after models are loaded and before the first request is served.

    May return an awaitable, which is awaited. Called for every plugin.
    Create loop-bound objects (tasks, queues) here, not at import time. A
    failure (raised, or from the awaitable) stops the server from starting.
    """


@hookspec
def shutdown(server: ServerContext) -> Awaitable[Any] | None:
    """Run when the server stops, before models are unloaded.

    May return an awaitable, which is awaited. Called for every plugin, each
    on its own: a failure (raised, or from the awaitable) is logged as
    ``plugin_shutdown_failed`` and does not stop the others from running.
    """
