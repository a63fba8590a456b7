"""State and logic shared by grps-rest and grps-grpc, one per server.

Kept as the server's shared ``GrpsRuntime`` (``context.shared``), created by
whichever transport starts first, so online/offline, the default model and
the monitor are the same for HTTP and gRPC. Nothing here counts requests: the
monitor reads the shared statistics counters (``sampler.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import structlog

from modelplatform import (
    DataPlane,
    InferenceRequest,
    InferenceResponse,
    InvalidArgument,
    Limits,
    ServerContext,
    check_model_access,
    counted_in_call,
)

from .converter import Payload, to_request
from .dag import Dag
from .models import choose_model
from .monitor import Monitor
from .options import GrpsOptions
from .sampler import MonitorSampler

log = structlog.get_logger("modelplatform.grps")
DRAIN_REASON = "grps-offline"


class GrpsRuntime:
    def __init__(self, context: ServerContext) -> None:
        self.context = context
        self.dataplane: DataPlane = context.dataplane
        #: The parts each request uses, kept here so a request looks them up once.
        self.inference = self.dataplane.inference
        self.repository = self.dataplane.repository
        self.health = self.dataplane.health
        self.options = GrpsOptions.from_settings(context.settings)
        self.limits = Limits.from_settings(context.settings)
        self.monitor = Monitor(self.options.monitor_window_secs)
        self.sampler = MonitorSampler(self.monitor, self.dataplane)
        #: grps's default DAG: what predict runs when a request names no model.
        self.dag = Dag(self.options.dag, self.dataplane) if self.options.dag else None
        self.online = False
        self.set_online(self.options.start_online)

    # ---- online / offline ----

    def set_online(self, online: bool) -> None:
        self.online = online
        if self.options.offline_drains_server and not online:
            self.health.hold_readiness(DRAIN_REASON)
        else:
            self.health.release_readiness(DRAIN_REASON)
        log.info("grps_online_changed", online=online)

    def ready(self) -> bool:
        return self.online and self.health.ready()

    # ---- inference ----

    def decode(self, payload: Payload, payload_model: str, query_model: str) -> InferenceRequest:
        if self.dag is not None and not (payload_model or query_model):
            return self._dag_request(payload)
        name, version = choose_model(payload_model, query_model, self.options.default_model)
        check_model_access(name)  # a key limited to models: before the name is even looked up
        config = self.repository.model_config(name, version)
        return to_request(payload, name, version, config, self.limits)

    def _dag_request(self, payload: Payload) -> InferenceRequest:
        """Decoded against the DAG's first model, marked for :meth:`infer` to run the DAG.
        A key limited to models must allow every model of the DAG."""
        for model in self.dag.models():  # type: ignore[union-attr]  # a DagRequest exists only when a DAG is set
            check_model_access(model)
        name, version = self.dag.first_model()  # type: ignore[union-attr]  # a DagRequest exists only when a DAG is set
        config = self.repository.model_config(name, version)
        request = to_request(payload, name, version, config, self.limits)
        return DagRequest(
            request.model_name,
            request.inputs,
            request.model_version,
            request.id,
            request.parameters,
            request.outputs,
        )

    def refused(self, model: str) -> None:
        """A request answered with a failure: counted as a refusal of ``model`` (or of model
        "" when the server does not know it) unless the dataplane already counted it."""
        if not counted_in_call():
            self.inference.count_refused(model)

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        if type(request) is DagRequest:
            return await self.dag.run(request)  # type: ignore[union-attr]  # a DagRequest exists only when a DAG is set
        return await self.inference.infer(request)

    @contextlib.asynccontextmanager
    async def stream(self, request: InferenceRequest) -> AsyncIterator[AsyncIterator[InferenceResponse]]:
        """The model's responses; closed on exit, so a gone client stops the model."""
        if type(request) is DagRequest:
            raise InvalidArgument("the grps DAG answers one response: name a model to stream")
        responses = self.inference.stream(request)
        try:
            yield responses
        finally:
            await responses.aclose()


class DagRequest(InferenceRequest):
    """A request for the DAG (no model named), decoded against its first model."""

    __slots__ = ()


def runtime(context: ServerContext) -> GrpsRuntime:
    """The server's one runtime, shared by grps-rest and grps-grpc."""
    return context.shared(GrpsRuntime, lambda: GrpsRuntime(context))
