"""The dataplane every dialect calls, in four parts that change for different reasons.

- :class:`Inference` (``dataplane.inference``): the per-request calls
  (infer, stream, call_raw), the version a request names (resolve), and the
  refusals a dialect counts itself.
- :class:`Repository` (``dataplane.repository``): the index, versions,
  configurations and metadata of models; loads and unloads.
- :class:`Health` (``dataplane.health``): live, ready (server and model),
  readiness holds, the server's metadata, the shutdown drain.
- :class:`Observation` (``dataplane.observation``): statistics and request observers.

and ``dataplane.calls`` (:class:`BackendCalls`): the five call-backs a backend
is handed (infer, stream, resolve, model_ready, load), nothing else; a plugin
that runs models as a backend does (grps's DAG) uses the same.

A dialect keeps the part it needs (``self.inference = context.dataplane.inference``)
or binds its methods when its routes are built, so a request pays no more
lookups than it did on one object.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from modelplatform.dataplane.health import Health
from modelplatform.dataplane.inference import Inference
from modelplatform.dataplane.observation import Observation, Siblings
from modelplatform.dataplane.repository import Repository
from modelplatform.models import ModelManager


class BackendCalls:
    """What a backend may call back (ensembles, BLS): infer, stream, resolve, model_ready, load.

    The parts' own bound methods, taken once: a backend's call costs what a dialect's does.
    """

    __slots__ = ("infer", "stream", "resolve", "model_ready", "load")

    def __init__(self, inference: Inference, repository: Repository, health: Health) -> None:
        self.infer = inference.infer
        self.stream = inference.stream
        self.resolve = inference.resolve
        self.model_ready = health.model_ready
        self.load = repository.load


@dataclass(frozen=True, slots=True)
class DataPlane:
    """The parts of one server's dataplane, made once by the composition root."""

    inference: Inference
    repository: Repository
    health: Health
    observation: Observation
    calls: BackendCalls

    @classmethod
    def of(
        cls,
        models: ModelManager,
        server_name: str,
        server_version: str,
        extensions: Sequence[str],
        siblings: Siblings | None = None,
    ) -> DataPlane:
        health = Health(models, server_name, server_version, extensions)
        inference, repository = Inference(models, health.drain), Repository(models)
        calls = BackendCalls(inference, repository, health)
        return cls(inference, repository, health, Observation(models, siblings), calls)
