"""Composition root: settings + plugins -> ServerContext (frozen), then the lifecycle.

Start-up order: plugins are collected and frozen; their ``configure`` hooks
set up this server's own state; the HTTP port opens (so
liveness answers while models load); models load per the control mode; the
gRPC server starts in the same loop; plugin ``startup`` hooks run; then the
server reports ready. Shutdown runs the same steps backwards.
"""

from __future__ import annotations

import asyncio
import inspect
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import grpc
import structlog

from modelplatform._version import __version__
from modelplatform.base.broadcasting import Broadcast
from modelplatform.base.cache_config import cache_size
from modelplatform.base.codecs import CodecRegistry
from modelplatform.base.errors import ModelPlatformError, PluginError
from modelplatform.base.logging import LOG_SETTINGS_TOPIC, configure, update_log_settings
from modelplatform.base.model_config import ModelConfig
from modelplatform.base.settings import Settings
from modelplatform.composition import shutdown
from modelplatform.composition.plugins import PluginSet, build_plugin_manager, call_shutdown_hooks
from modelplatform.composition.security import Security
from modelplatform.dataplane.context import ListenerContexts, ServerContext
from modelplatform.dataplane.declarations import GrpcService, HttpDialect
from modelplatform.dataplane.draining import Phase
from modelplatform.dataplane.facade import DataPlane
from modelplatform.frontends import cluster
from modelplatform.frontends.gate import AccessGate
from modelplatform.frontends.grpc_server import start_grpc_server
from modelplatform.frontends.http import HttpFront
from modelplatform.frontends.oneport import OnePort
from modelplatform.frontends.placement import Placement, start_placement
from modelplatform.frontends.tls import ServerTls, server_tls
from modelplatform.models import ModelManager, repository
from modelplatform.models.backend import BackendRegistry
from modelplatform.models.polling import RepositoryPoller
from modelplatform.models.remote_repository import RepositorySource, open_repository
from modelplatform.models.response_cache import ResponseCache
from modelplatform.models.stats import LatencyBuckets
from modelplatform.models.warmup import WarmupSource

log = structlog.get_logger("modelplatform.composition.server")

#: A draining server closes an HTTP connection with no request once it has been quiet this long.
IDLE_CONNECTION_SECS = 0.5


@dataclass(frozen=True, eq=False)
class Composition:
    """What :func:`compose` built: the plugins' context, and what core keeps to itself."""

    context: ServerContext
    plugins: PluginSet
    models: ModelManager
    #: The remote repository the models' folder mirrors, else None.
    remote: RepositorySource | None = None


def compose(
    settings: Settings,
    extra_plugins: Sequence[object] = (),
    cluster_link: cluster.SiblingLink | None = None,
    remote: RepositorySource | None = None,
    security: Security | None = None,
) -> Composition:
    """Collect every plugin's declarations once and freeze them.

    ``cluster_link`` (a ``--workers`` worker) relays the manager's loads and
    unloads to the sibling workers and brings their statistics to the dataplane.
    ``remote`` (opened by the CLI, remote_repository.py) is the bucket that
    ``settings.model_repository`` mirrors: loads and polls fetch from it.
    ``security``: the TLS files and key file read at start-up (read here when not given).
    """
    security = security or Security.read(settings)  # before any port opens
    plugins = build_plugin_manager(settings, extra_plugins)
    hook = plugins.manager.hook
    backends = BackendRegistry(_flatten(hook.register_backends(settings=settings)))
    codecs = CodecRegistry(_flatten(hook.register_codecs(settings=settings)))
    dialects = _unique_dialects(_flatten(hook.register_http_dialects(settings=settings)))
    services = list(_flatten(hook.register_grpc_services(settings=settings)))
    extensions = _extensions(dialects.values(), services, codecs)
    models = ModelManager(
        settings.model_repository,
        backends,
        settings.strict_readiness,
        replicator=cluster_link,
        warmup_source=_warmup_source(plugins),
        remote=remote,
        response_cache=_response_cache(settings),
    )
    dataplane = DataPlane.of(models, settings.server_name, __version__, extensions, siblings=cluster_link)
    models.bind_dataplane(dataplane.calls)  # backends call other models through it (ensembles, BLS)
    context = ServerContext(
        settings=settings,
        codecs=codecs,
        dialects=MappingProxyType(dialects),  # read-only views: the context is frozen through
        grpc_services=tuple(services),
        dataplane=dataplane,
        broadcast=_broadcast(cluster_link),
    )
    context.shared(ServerTls, lambda: security.tls)  # the front ends' (frontends/tls.py server_tls)
    context.shared(ListenerContexts, lambda: ListenerContexts(security.tls.ssl_context))  # the plugins'
    context.shared(AccessGate, lambda: security.gate)
    context.shared(LatencyBuckets, lambda: models.latency_buckets)  # statistics.set_latency_buckets
    hook.configure(server=context)  # per-server set-up, before any port opens or model loads
    return Composition(context, plugins, models, remote)


def _response_cache(settings: Settings) -> ResponseCache | None:
    """The server's response cache, one per process (each ``--workers`` worker has its own)."""
    size = cache_size(settings.cache_config)
    return ResponseCache(size) if size else None


def _broadcast(cluster_link: cluster.SiblingLink | None) -> Broadcast:
    """The log settings are the core's own; plugins subscribe their topics at start-up."""
    broadcast = Broadcast(cluster_link)
    broadcast.subscribe(LOG_SETTINGS_TOPIC, update_log_settings)
    return broadcast


def _warmup_source(plugins: PluginSet) -> WarmupSource:
    """The ``warmup_requests`` hook as the loader calls it (by keyword, as pluggy needs)."""

    def requests(name: str, version: int, version_dir: Path, config: ModelConfig) -> Any:
        hook = plugins.manager.hook.warmup_requests
        return hook(model_name=name, version=version, version_dir=version_dir, config=config)

    return requests


def _flatten(results: list[Sequence[Any] | None]) -> list[Any]:
    return [item for result in results if result for item in result]


def _unique_dialects(dialects: list[HttpDialect]) -> dict[str, HttpDialect]:
    by_name: dict[str, HttpDialect] = {}
    for dialect in dialects:
        if dialect.name in by_name:
            raise PluginError(f"HTTP dialect '{dialect.name}' is registered twice")
        by_name[dialect.name] = dialect
    return by_name


def _extensions(dialects: Any, services: list[GrpcService], codecs: CodecRegistry) -> list[str]:
    names = [e for d in dialects for e in d.extensions]
    names += [e for s in services for e in s.extensions] + list(codecs.extensions)
    return list(dict.fromkeys(names))


class RunningServer:
    """A started server; ``stop()`` shuts it down in reverse order."""

    def __init__(self, composition: Composition) -> None:
        self.context = composition.context
        #: Core's own: plugins reach models only through ``context.dataplane``.
        self.models = composition.models
        self._remote = composition.remote
        self._plugins = composition.plugins
        self.http: HttpFront | None = None
        #: ``--single-port``: sorts the HTTP port's connections between HTTP and gRPC.
        self.one_port: OnePort | None = None
        self._grpc: grpc.aio.Server | None = None
        self._poller: asyncio.Task[None] | None = None
        self._grpc_stopped: asyncio.Future[None] | None = None
        #: Where the loop and grpc.aio's poller run (placement.py); None: left to the system.
        self._placement: Placement | None = None
        self._tls_watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        ctx = self.context
        tls = server_tls(ctx)
        if tls.listeners:
            self._tls_watch = asyncio.ensure_future(tls.watch())
        if ctx.dialects:  # no HTTP plugin enabled: no HTTP port
            await self._start_http()
        await load_initial_models(ctx.settings, self.models)
        self._poller = start_polling(ctx.settings, self.models, self._remote)
        self._grpc = await start_grpc_server(ctx, self._grpc_address())
        if self._grpc is not None:
            drain = ctx.dataplane.health.drain
            self._placement = start_placement(ctx.settings.grpc_cpu_placement, lambda: drain.entered)
        await _call_hooks(self._plugins.manager.hook.startup(server=ctx))
        ctx.dataplane.health.accepting = True
        log.info("server_started", plugins=list(self._plugins.loaded))

    async def _start_http(self) -> None:
        settings = self.context.settings
        if settings.single_port:
            # A connection that stalls before it is sorted is timed like a stalled request.
            sort_timeout = settings.http_request_timeout_secs or settings.http_keep_alive_timeout_secs
            self.one_port = OnePort(sort_timeout)
            log.info("single_port_enabled", port=settings.http_port, grpc_address=self.one_port.grpc_address)
        self.http = HttpFront(self.context, self.one_port.protocol if self.one_port else None)
        await self.http.start()

    def _grpc_address(self) -> str | None:
        """Single port: gRPC behind the HTTP port, or on it when no HTTP dialect is enabled."""
        settings = self.context.settings
        if not settings.single_port:
            return None
        if self.one_port is not None:
            return self.one_port.grpc_address
        return f"{settings.host}:{settings.http_port}"

    # ---- the drain (shutdown.py drives these on a clock) ----

    def begin_drain(self) -> None:
        """Every readiness surface turns false; everything is still served."""
        self.context.dataplane.health.drain.advance(Phase.DRAINING)

    def stop_accepting(self, grace: float) -> None:
        """Close the listeners; gRPC sends GOAWAY and lets calls run ``grace`` seconds more."""
        self.context.dataplane.health.drain.advance(Phase.CLOSING)
        if self.http is not None:
            self.http.stop_accepting()
        if self._grpc is not None:
            self._grpc_stopped = asyncio.ensure_future(self._grpc.stop(grace=grace))

    def in_flight(self) -> InFlight:
        """What the drain still waits for; once closing, closes HTTP connections gone quiet."""
        if self.http is not None and self.context.dataplane.health.drain.closing:
            self.http.close_idle(IDLE_CONNECTION_SECS)
        grpc_busy = self._grpc_stopped is not None and not self._grpc_stopped.done()
        connections = self.http.open_connections if self.http is not None else 0
        return InFlight(self.context.dataplane.health.drain.in_flight, connections, grpc_busy)

    def end_calls(self) -> int:
        """The budget ran out: calls still in flight end with UNAVAILABLE (503)."""
        return self.context.dataplane.health.drain.end()

    async def stop(self) -> None:
        ctx = self.context
        ctx.dataplane.health.accepting = False
        for task in (self._poller, self._tls_watch):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await call_shutdown_hooks(self._plugins.manager, ctx)
        if self._placement is not None:
            await self._placement.stop()
        if self._grpc is not None:
            await (self._grpc_stopped or self._grpc.stop(grace=2))
        if self.one_port is not None:
            self.one_port.close()  # gRPC connections the gRPC server's stop left, and the socket
        if self.http is not None:
            await self.http.stop()
        await self.models.shutdown()
        log.info("server_stopped")


@dataclass(frozen=True, slots=True)
class InFlight:
    """What a draining server is still busy with."""

    calls: int  # dataplane calls (inferences, streams, raw calls) on any transport
    connections: int  # open HTTP connections
    grpc: bool  # the gRPC server has calls or streams left

    @property
    def idle(self) -> bool:
        return not (self.calls or self.connections or self.grpc)


async def _call_hooks(results: list[Any]) -> None:
    for result in results:
        if inspect.isawaitable(result):
            await result


async def load_initial_models(settings: Settings, models: ModelManager) -> None:
    """Load what the control mode asks for; failures are kept as reasons, not raised."""
    names = sorted(repository.scan(settings.model_repository))
    if settings.model_control_mode == "explicit" and "*" not in settings.load_models:
        names = list(settings.load_models)
    loads = (models.load(n, required=True) for n in names)
    results = await asyncio.gather(*loads, return_exceptions=True)
    for name, result in zip(names, results):
        if isinstance(result, ModelPlatformError):
            log.warning("model_unavailable", model=name, reason=result.message)


def start_polling(
    settings: Settings, models: ModelManager, remote: RepositorySource | None = None
) -> asyncio.Task[None] | None:
    """In poll mode, a task that follows the repository every ``repository_poll_secs``."""
    if settings.model_control_mode != "poll" or settings.repository_poll_secs <= 0:
        return None
    poller = RepositoryPoller(models, settings.model_repository, settings.repository_poll_secs, remote)
    log.info("repository_polling_started", every_secs=settings.repository_poll_secs)
    return asyncio.ensure_future(poller.run())


async def serve(
    settings: Settings,
    worker: tuple[int, cluster.ClusterAddress] | None = None,
    remote: RepositorySource | None = None,
    security: Security | None = None,
) -> None:
    """Run until SIGINT/SIGTERM, then drain (shutdown.py); ``worker`` (index, address) joins a cluster."""
    link = cluster.SiblingLink(worker[0], settings.workers) if worker is not None else None
    server = RunningServer(compose(settings, cluster_link=link, remote=remote, security=security))
    signals = shutdown.Signals(_signals_handled(worker is not None))
    tls = server_tls(server.context)
    if tls.listeners:
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _reload_tls, tls)
    member = _member(server.context, server.models, link) if link is not None else None
    if member is not None:
        server.context.dataplane.health.hold_readiness(cluster.WAITING)  # until the siblings are up
    await server.start()
    if member is not None and worker is not None:
        await member.join(worker[1])
    try:
        await signals.received.wait()
        await shutdown.drain(server, settings.drain_delay_secs, settings.exit_timeout_secs)
    finally:
        if member is not None:
            await member.leave()
        await server.stop()
    shutdown.arm_watchdog(shutdown.EXIT_AFTER_STOP_SECS, "threads outlived the server")


def _reload_tls(tls: ServerTls) -> None:
    log.info("reload_signal_received", signal="SIGHUP")
    tls.reload()


def _signals_handled(is_worker: bool) -> tuple[signal.Signals, ...]:
    """A worker drains on the SIGTERM its supervisor forwards; a terminal's Ctrl-C, sent to the
    whole process group, reaches the supervisor, which forwards it once (never twice)."""
    if not is_worker:
        return (signal.SIGINT, signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return (signal.SIGTERM,)


def _member(ctx: ServerContext, models: ModelManager, link: cluster.SiblingLink) -> cluster.Member:
    health = ctx.dataplane.health

    def ready_here() -> bool:
        others = health.readiness_holds - {cluster.WAITING}
        return health.live and health.accepting and not others and models.all_requested_ready()

    return cluster.Member(
        link,
        models,
        ready_here,
        health,
        ctx.dataplane.observation.local_statistics,
        deliver=ctx.broadcast.deliver,
    )


def run(settings: Settings, remote: RepositorySource | None = None, security: Security | None = None) -> None:
    """Serve in this process, or supervise ``settings.workers`` worker processes.

    ``remote``: the bucket ``settings.model_repository`` mirrors. Each worker
    opens it again and attaches to the mirror the supervisor fetched.
    ``security``: the files start-up read (each worker process reads its own).
    """
    if settings.workers > 1:
        supervisor = cluster.Supervisor(settings, run_worker)
        raise SystemExit(_run_loop(supervisor.run()))
    _run_loop(serve(settings, remote=remote, security=security))


def run_worker(settings: Settings, index: int, address: cluster.ClusterAddress) -> None:
    """A worker process of ``--workers N`` (started by the supervisor)."""
    configure(settings.log_verbose, settings.log_format)
    structlog.contextvars.bind_contextvars(worker=index)
    remote = _attached(settings)
    try:
        _run_loop(serve(settings, (index, address), remote))
    finally:
        if remote is not None:
            remote.close()


def _attached(settings: Settings) -> RepositorySource | None:
    """A worker's handle on the remote repository whose mirror ``model_repository`` names."""
    if not settings.model_repository_url:
        return None
    return open_repository(settings, build_plugin_manager(settings).manager.hook)[1]


def _run_loop(main: Any) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
