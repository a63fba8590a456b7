"""Warmup: every instance of a loading version runs its samples before the version turns READY.

Samples come from the configuration's ``model_warmup`` (warmup_samples.py)
and then from plugins (the ``warmup_requests`` hook, e.g. TF Serving's
``assets.extra/tf_serving_warmup_requests``). Each is checked against the
model's inputs like a client request. They go straight to each instance, not
through the scheduler, so they count in no inference statistics (as in
Triton); the time they took is the ``model_warmed_up`` event's and the
statistics' ``warmup_stats``. Instances warm up side by side, each running
the samples in order; the first failure stops the others and fails the load
with a reason naming the sample.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog

from modelplatform.base.errors import Internal, InvalidArgument, ModelPlatformError
from modelplatform.base.inference import InferenceRequest
from modelplatform.base.model_config import ModelConfig
from modelplatform.base.validation import validate_request
from modelplatform.models.backend import Backend
from modelplatform.models.states import ModelVersion
from modelplatform.models.streams import closing_stream
from modelplatform.models.warmup_samples import Sample, triton_samples

log = structlog.get_logger("modelplatform.models")

#: The plugins' answer for one version: ``(model, version, version_dir, config) -> requests``.
WarmupSource = Callable[[str, int, Path, ModelConfig], Sequence[InferenceRequest] | None]


async def warm_up(mv: ModelVersion, model_dir: Path, plugins: WarmupSource | None) -> None:
    """Run every sample on every instance of ``mv``; raises the first failure."""
    samples = await asyncio.to_thread(gather_samples, mv, model_dir, plugins)
    if not samples:
        return
    started = time.perf_counter_ns()
    await _on_every_instance(mv, samples)
    elapsed = time.perf_counter_ns() - started
    if mv.stats is not None:
        mv.stats.record_warmup(elapsed, sum(s.count for s in samples) * len(mv.instances))
    log.info(
        "model_warmed_up",
        model=mv.name,
        version=mv.version,
        samples=len(samples),
        instances=len(mv.instances),
        duration_ms=round(elapsed / 1e6, 1),
    )


def gather_samples(mv: ModelVersion, model_dir: Path, plugins: WarmupSource | None) -> list[Sample]:
    """The config's samples, then the plugins'; each checked against the model's inputs."""
    samples = triton_samples(mv.config, model_dir)
    version_dir = mv.version_dir(model_dir)
    found = plugins(mv.name, mv.version, version_dir, mv.config) if plugins else None
    samples += [Sample(r.id or f"#{i}", r) for i, r in enumerate(found or ())]
    for sample in samples:
        sample.request.model_name, sample.request.model_version = mv.name, mv.version_str
        try:
            validate_request(sample.request, mv.config)
        except ModelPlatformError as error:
            raise InvalidArgument(f"warmup sample '{sample.name}': {error.message}") from None
    return samples


async def _on_every_instance(mv: ModelVersion, samples: list[Sample]) -> None:
    tasks = [
        asyncio.ensure_future(_run_samples(mv.config, index, instance, samples))
        for index, instance in enumerate(mv.instances)
    ]
    try:
        await asyncio.gather(*tasks)
    finally:  # one instance failed: the load fails, so stop the others' warmup now
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _run_samples(config: ModelConfig, index: int, instance: Backend, samples: list[Sample]) -> None:
    for sample in samples:
        for _ in range(sample.count):
            try:
                await _run_once(config, instance, sample.request)
            except Exception as error:  # noqa: BLE001 - any failure is the load's reason
                reason = _reason(error)
                raise Internal(
                    f"warmup sample '{sample.name}' failed on instance {index}: {reason}"
                ) from None


async def _run_once(config: ModelConfig, instance: Backend, request: InferenceRequest) -> None:
    if config.decoupled:  # a streaming model answers through stream(), however many times
        async with closing_stream(instance.stream(request)) as responses:
            async for _ in responses:
                pass
        return
    results = await instance.execute([request])
    if len(results) != 1:
        raise Internal(f"the backend answered {len(results)} results for 1 request")
    if isinstance(results[0], ModelPlatformError):
        raise results[0]


def _reason(error: Exception) -> str:
    if isinstance(error, ModelPlatformError):
        return error.message
    return f"{type(error).__name__}: {error}"
