"""The calls every dialect makes per request: infer, stream, a raw call, and what they name.

Dialects decode their wire format into an InferenceRequest, call
:meth:`Inference.infer` (or :meth:`Inference.stream`), and encode the
InferenceResponse; they never touch models or backends directly. Everything
here is a dict lookup or a check against an already-frozen ModelConfig:
nothing is parsed per request. Changes when what a request does changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Iterator, Mapping

from modelplatform.base.access.scope import check_first_model
from modelplatform.base.deadlines import deadline_for
from modelplatform.base.device import to_host_inputs
from modelplatform.base.errors import DecoupledModel, ModelExecutionError, ModelPlatformError
from modelplatform.base.inference import InferenceRequest, InferenceResponse, Tensor
from modelplatform.dataplane.calls import Call, CountedChunks, failure_reason, record_failure
from modelplatform.dataplane.classification import (
    CLASSIFICATION,
    check_requested,
    classified,
    requested_count,
)
from modelplatform.dataplane.draining import Drain, ServerShuttingDown
from modelplatform.dataplane.views import streams, version_info
from modelplatform.models import ModelManager, ModelVersion
from modelplatform.models.backend import RawResponse
from modelplatform.models.response_cache import VersionCache
from modelplatform.models.stats import ModelStats
from modelplatform.models.streams import closing_stream
from modelplatform.models.views import VersionInfo


class Inference:
    """Requests to models: each counted in flight (for the drain) and in its model's statistics."""

    def __init__(self, models: ModelManager, drain: Drain) -> None:
        self._models = models
        self._drain = drain

    def resolve(self, name: str, version: str = "") -> VersionInfo:
        """The READY version a request names: ``version``, or the newest READY one when "".

        Raises what :meth:`infer` would: ModelNotFound when nothing READY
        answers (unknown, never loaded, unloaded, failed), ModelNotReady only
        while the model's first load runs, InvalidArgument for a version that
        is not a number. Dialects with
        version labels (TF Serving) turn the label into a number first.
        """
        return version_info(self._models.get(name, version))

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Validate, schedule, and shape the response for one request."""
        check_first_model(request.model_name)  # a key limited to models, on a call naming it late
        started = request.arrived_ns = time.perf_counter_ns()
        try:
            model = self._models.get(request.model_name, request.model_version)
        except ModelPlatformError:
            self._count_refused(request.model_name, started)
            raise
        stats = model.stats
        drain = self._drain
        # The hot path: model.request() and Call.failures_counted() spelled out inline,
        # since generator context managers cost more than the rest of this method.
        task = drain.enter()
        model.enter()
        scheduled = False
        rows = 0
        try:
            rules = model.rules
            if request.layout not in rules.fitting:  # a layout that fitted before fits (validation.py)
                rules.check(request)  # inputs first, as before: their errors come first
                if request.outputs is not None:
                    try:
                        check_requested(request.outputs, model.config)
                    except ModelPlatformError:
                        rules.fitting.discard(request.layout)  # its outputs do not fit after all
                        raise
            if model.config.decoupled:  # its responses need a streaming call
                raise DecoupledModel(request.model_name)
            request.deadline = deadline_for(request.parameters, model.config.dynamic_batching)
            if not model.accepts_device_memory or model.cache is not None:
                # a client's CUDA window, for a backend that reads host memory or a cache key
                to_host_inputs(request)
            scheduled = True
            if model.cache is None:
                response = await model.scheduler.submit(request)  # type: ignore[union-attr]  # a READY version has its scheduler
            else:
                response, rows = await _cached(model, model.cache, request)
        except asyncio.CancelledError:
            if not drain.ended(task):
                if stats is not None:  # the client left: Triton's CANCELED, nothing to log
                    stats.record_failure(time.perf_counter_ns() - started, "CANCELED")
                raise
            failure: ModelPlatformError = ServerShuttingDown()
            record_failure(request.model_name, request.model_version, stats, started, failure, "CANCELED")
            raise failure from None
        except Exception as error:
            failure = _counted_failure(error, request, stats, started, scheduled)
            if failure is error:
                raise
            raise failure from error
        finally:
            model.leave()
            drain.leave(task)
        if model.cache is None:
            rows = request.inputs[0].shape[0] if model.config.max_batch_size > 0 else 1
        stats.record_success(time.perf_counter_ns() - started, 0, rows)  # type: ignore[union-attr]  # the hot path keeps one check: stats exist once READY
        return _finish(response, request, model)

    def infer_now(self, request: InferenceRequest) -> InferenceResponse | None:
        """:meth:`infer` without awaiting, where the model answers at once; else None, with
        nothing done or counted, and the caller awaits :meth:`infer`.

        "At once": a request with no parameters, in a layout that fitted before, to
        a model without a response cache whose scheduler has an idle instance that
        runs it inline (``Backend.execute_now``). Such a call never yields to the
        loop, so no drain, cancellation or unload can happen during it: it skips
        the in-flight counts :meth:`infer` keeps, and their cost.
        """
        check_first_model(request.model_name)
        try:
            model = self._models.get(request.model_name, request.model_version)
        except ModelPlatformError:
            return None  # infer() raises it, counted
        if request.parameters or model.cache is not None or model.config.decoupled:
            return None
        if request.layout not in model.rules.fitting or not self._drain.admit_now():
            return None
        started = request.arrived_ns = time.perf_counter_ns()
        request.deadline = deadline_for(request.parameters, model.config.dynamic_batching)
        stats = model.stats
        scheduled = False
        try:
            if not model.accepts_device_memory:
                to_host_inputs(request)
            scheduled = True
            response = model.scheduler.submit_now(request)  # type: ignore[union-attr]  # a READY version has its scheduler
        except Exception as error:
            failure = _counted_failure(error, request, stats, started, scheduled)
            if failure is error:
                raise
            raise failure from error
        if response is None:
            return None
        rows = request.inputs[0].shape[0] if model.config.max_batch_size > 0 else 1
        stats.record_success(time.perf_counter_ns() - started, 0, rows)  # type: ignore[union-attr]  # stats exist once READY
        return _finish(response, request, model)

    def count_refused(self, name: str, protocol: str = "") -> None:
        """A request a dialect refused before asking the dataplane (a body it could not
        decode, a model it resolved itself): one failure OTHER, under ``name`` when the
        server knows it, else under ""; ``protocol`` when no request scope is set."""
        self._models.counters_of(name).record_failure(0, "OTHER", protocol)

    def _count_refused(self, name: str, started: int) -> None:
        """A request no READY version answered: counted in its model's own counters when
        the server knows that name, else under "" (clients must not create label values)."""
        counters = self._models.counters_of(name)
        counters.record_failure(time.perf_counter_ns() - started, "OTHER")

    async def stream(self, request: InferenceRequest) -> AsyncGenerator[InferenceResponse, None]:
        """Validate, then yield every response of a streaming (decoupled or generator) model.

        Each stream takes the model's instances in turn and counts in flight
        until it ends, so an unload waits for it. Errors before or during the
        stream are raised from the iteration; closing the iterator early
        (client gone) closes the backend's stream too and counts nothing.
        A model whose instances do not stream, or a stateful one (its
        sequences live in its scheduler), answers through :meth:`infer`
        (its scheduler, its batching): one response, marked ``final``.
        """
        check_first_model(request.model_name)
        model = self._models.get(request.model_name, request.model_version)
        if not streams(model) or model.config.sequence_batching is not None:
            response = await self.infer(request)
            response.final = True
            yield response
            return
        task = self._drain.enter()
        call = Call(model, request.model_name, request.model_version)
        try:
            with call.failures_counted(), self._ended_as_unavailable(task):
                model.rules.check(request)
                if not model.accepts_device_memory:
                    to_host_inputs(request)
                if request.outputs is not None:
                    check_requested(request.outputs, model.config)
                # closing: a consumer that stops early stops the backend now, not at GC.
                async with closing_stream(call.instance.stream(request)) as responses:
                    async for response in responses:
                        yield _finish(response, request, model)
            call.succeeded()
        finally:
            call.release()
            self._drain.leave(task)

    async def call_raw(self, name: str, version: str, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        """Hand a request in the model's own wire format to an instance (custom routes).

        Counted like :meth:`infer`: in flight until answered (a streamed body:
        until its chunks end or it is closed, so close it), then as a success
        or a failure in the model's statistics. Instances take turns.
        """
        check_first_model(name)
        model = self._models.get(name, version)
        task = self._drain.enter()
        call = Call(model, name, version)
        try:
            with call.failures_counted(), self._ended_as_unavailable(task):
                raw = await call.instance.handle_raw(body, headers)
        except BaseException:
            call.release()  # e.g. cancelled: no longer in flight, counted as nothing
            raise
        finally:
            self._drain.leave(task)
        if isinstance(raw.body, (bytes, bytearray, memoryview)):
            call.succeeded()
            return raw
        return RawResponse(CountedChunks(raw.body, call), raw.content_type, raw.status)

    @contextlib.contextmanager
    def _ended_as_unavailable(self, task: asyncio.Task[object] | None) -> Iterator[None]:
        """A call the drain's end cancelled raises ServerShuttingDown, not CancelledError."""
        try:
            yield
        except asyncio.CancelledError:
            if not self._drain.ended(task):
                raise
            raise ServerShuttingDown() from None


def _counted_failure(
    error: Exception, request: InferenceRequest, stats: ModelStats | None, started: int, scheduled: bool
) -> ModelPlatformError:
    """What a failed request raises (an error that is not the platform's: the model's), counted
    in its model's statistics with Triton's reason; ``scheduled``: it failed once scheduling began."""
    if isinstance(error, ModelPlatformError):
        failure, reason = error, failure_reason(error, scheduled)
    else:
        failure, reason = ModelExecutionError(request.model_name, error), "BACKEND"
    record_failure(request.model_name, request.model_version, stats, started, failure, reason)
    return failure


async def _cached(
    model: ModelVersion, cache: VersionCache, request: InferenceRequest
) -> tuple[InferenceResponse, int]:
    """The answer from the response cache, else from the model (then kept); and the rows
    the model inferred for it: a hit infers none (Triton's ``inference_count``)."""
    key, response, lookup_ns = cache.lookup(request)
    if response is not None:
        return response, 0
    try:
        response = await model.scheduler.submit(request)  # type: ignore[union-attr]  # a READY version has its scheduler
    except BaseException:
        cache.missed(lookup_ns)
        raise
    cache.insert(key, response, lookup_ns)
    return response, request.inputs[0].shape[0] if model.config.batching else 1


def _finish(response: InferenceResponse, request: InferenceRequest, model: ModelVersion) -> InferenceResponse:
    response.model_name = request.model_name
    response.model_version = model.version_str
    response.id = request.id
    if request.outputs is not None:
        by_name: dict[str, Tensor] = {}
        for output in response.outputs:  # a loop: a comprehension is one more frame per request
            by_name[output.name] = output
        selected = []
        for wanted in request.outputs:
            tensor = by_name.get(wanted.name)
            if tensor is not None:
                if wanted.parameters:  # most outputs are named alone: nothing to merge
                    tensor.parameters = {**tensor.parameters, **wanted.parameters}
                    if CLASSIFICATION in wanted.parameters:
                        tensor = _classified(tensor, model)
                selected.append(tensor)
        response.outputs = selected
    return response


def _classified(tensor: Tensor, model: ModelVersion) -> Tensor:
    count = requested_count(tensor.parameters)
    if not count:
        return tensor
    return classified(tensor, count, model.config.batching, model.labels.get(tensor.name, ()))
