"""The Backend contract and the registry that picks one for a model.

A backend class is registered by a plugin's ``register_backends`` hook. The
model manager creates one instance per model version and instance_group count
(``instance_index`` tells them apart), calls :meth:`Backend.load` once, then
:meth:`Backend.execute` with batches of already-validated requests.
Heavy imports (tensorrt, onnxruntime, ...) belong in ``load()``, so every
plugin imports on a machine without the library or a GPU.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from modelplatform.base.errors import InvalidArgument, ModelPlatformError, PluginError, Unsupported
from modelplatform.base.inference import InferenceRequest, InferenceResponse
from modelplatform.base.model_config import ModelConfig
from modelplatform.models.views import VersionInfo

ExecuteResult = list[InferenceResponse | ModelPlatformError]


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A backend's answer to a raw request: bytes, or byte chunks to stream."""

    body: bytes | AsyncIterator[bytes]
    content_type: str = "application/octet-stream"
    status: int = 200


class ServerCalls(Protocol):
    """What a backend may call back on the server: other models (ensembles, BLS, pipelines).

    Each call is a request like a client's: the called model keeps its own
    scheduling, batching and statistics. The server's dataplane satisfies it;
    a backend sees nothing more of the server.
    """

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """One response of the named model; raises the model's error (ModelNotFound, ...)."""
        ...

    def stream(self, request: InferenceRequest) -> AsyncGenerator[InferenceResponse, None]:
        """Every response of a streaming model (one, marked final, for any other); close it
        to stop the called model's work early."""
        ...

    def resolve(self, name: str, version: str = "") -> VersionInfo:
        """The READY version a request would reach (the newest when ``version`` is "");
        raises ModelNotFound when none answers."""
        ...

    def model_ready(self, name: str, version: str = "") -> bool:
        """Whether a request to ``name`` (``version``) would be answered now."""
        ...

    async def load(self, name: str) -> None:
        """Load ``name`` as the repository declares it; raises with the reason when it does not load."""
        ...


class PhaseClock:
    """Where a backend's ``execute`` stops preparing inputs and starts producing outputs.

    The scheduler times the whole call; a backend that calls
    :meth:`inputs_ready` (inputs converted for the framework, about to run it)
    and :meth:`outputs_started` (the framework returned, outputs still to be
    converted) splits that time into Triton's compute_input, compute_infer and
    compute_output. Without the marks the whole call is compute_infer. One
    execute runs at a time per instance, so one clock per instance is enough.
    """

    __slots__ = ("inputs_ready_ns", "outputs_started_ns")

    def __init__(self) -> None:
        self.inputs_ready_ns = 0
        self.outputs_started_ns = 0

    def inputs_ready(self) -> None:
        self.inputs_ready_ns = time.perf_counter_ns()

    def outputs_started(self) -> None:
        self.outputs_started_ns = time.perf_counter_ns()

    def split(self, started_ns: int, ended_ns: int) -> tuple[int, int, int]:
        """(input, infer, output) ns of a call from ``started_ns`` to ``ended_ns``; clears the marks."""
        ready, returned = self.inputs_ready_ns, self.outputs_started_ns
        self.inputs_ready_ns = self.outputs_started_ns = 0
        if not started_ns <= ready <= ended_ns:
            ready = started_ns  # no mark (or one left from another call): no input phase
        if not ready <= returned <= ended_ns:
            returned = ended_ns
        return ready - started_ns, returned - ready, ended_ns - returned


class Backend(ABC):
    """Runs one model version. Subclass it, set ``kind``, implement the coroutines.

    ``execute`` returns exactly one entry per request, in order: a response, or
    the error for that request alone (Triton's contract), so one bad request in
    a batch never fails its neighbours.
    """

    #: Unique backend name, matched against config ``backend``.
    kind: ClassVar[str]
    #: Triton ``platform`` values this backend serves (``onnxruntime_onnx``, ...).
    platforms: ClassVar[tuple[str, ...]] = ()
    #: Files whose presence in a version folder implies this backend.
    model_files: ClassVar[tuple[str, ...]] = ()
    #: True when ``execute`` may run for many requests at once on one instance (it only
    #: awaits other models, as an ensemble does): the scheduler then never makes a
    #: request wait for the instance to be idle.
    concurrent: ClassVar[bool] = False
    #: True when ``execute`` reads inputs whose ``Tensor.device`` is set (values in GPU
    #: memory, ``data`` a stand-in) and honours ``RequestedOutput.device_destination``;
    #: for any other backend the dataplane copies such inputs to the host first.
    accepts_device_memory: ClassVar[bool] = False

    def __init__(self, config: ModelConfig, version_dir: Path, instance_index: int = 0) -> None:
        self.config = config
        self.version_dir = version_dir
        self.instance_index = instance_index
        #: Marks ``execute`` may set to split its time (see :class:`PhaseClock`).
        self.phases = PhaseClock()
        #: What the backend may call back on the server (:class:`ServerCalls`), set
        #: before ``load()``: to run other models (ensembles, BLS) with their own
        #: scheduling and statistics. None in a process that serves no models (a
        #: process instance's child).
        self.dataplane: ServerCalls | None = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why this backend cannot run on this machine, or None when it can."""
        return None

    async def load(self) -> None:  # noqa: B027 - optional hook
        """Prepare to serve. May replace ``self.config`` to fill in what it omitted.

        Instances load one after another; each is made with the configuration
        the one before it left, so a completion made by the first is seen by
        the others, the scheduler and the config endpoint.
        """

    async def unload(self) -> None:  # noqa: B027 - optional hook
        """Release everything ``load`` acquired. Called once, also after a failed load."""

    @abstractmethod
    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        """Run a batch; one response or error per request, in order."""

    def execute_now(self, request: InferenceRequest) -> InferenceResponse | ModelPlatformError | None:
        """One request answered at once, on the event loop; None where this instance cannot
        (the default), having done nothing: the request then goes to :meth:`execute`.

        For a model that measured cheap enough to run inline (a few microseconds),
        where a coroutine and its awaits would cost more than the model: the
        scheduler offers it only an idle instance nobody waits for, and records its
        phases as for :meth:`execute`. It must neither block nor await; an error
        for this request alone is returned, as :meth:`execute` returns one.
        """
        return None

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        """Several responses for one request (decoupled / generator models).

        Mark a response ``final`` when it is known to be the last as it is sent;
        closing the iterator early (the client left) must stop the work.
        """
        raise Unsupported(f"model '{self.config.name}' does not stream responses")

    @property
    def streams(self) -> bool:
        """Whether :meth:`stream` may answer a request several times (valid after ``load``).

        Streaming calls to a model whose instances do not stream go through its
        scheduler like unary ones (dynamic batching included) and get one
        response. By default: a decoupled model, or a class that overrides
        :meth:`stream`.
        """
        return self.config.decoupled or type(self).stream is not Backend.stream

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        """Answer a request in the model's own wire format (a dialect's custom route)."""
        raise Unsupported(f"model '{self.config.name}' does not handle raw requests")


class BackendRegistry:
    """Backend classes by kind, frozen at start-up; resolves a model's backend."""

    def __init__(self, classes: Sequence[type[Backend]]) -> None:
        self._by_kind: dict[str, type[Backend]] = {}
        for cls in classes:
            if cls.kind in self._by_kind:
                raise PluginError(
                    f"backend kind '{cls.kind}' is registered twice: "
                    f"{self._by_kind[cls.kind].__module__} and {cls.__module__}"
                )
            self._by_kind[cls.kind] = cls

    @property
    def kinds(self) -> Mapping[str, type[Backend]]:
        return dict(self._by_kind)

    def resolve(self, config: ModelConfig, model_dir: Path) -> type[Backend]:
        """By config ``backend``, then ``platform``, then the files present."""
        if config.backend:
            return self._by_name(config.backend, config.name)
        if config.platform:
            for cls in self._by_kind.values():
                if config.platform in cls.platforms:
                    return cls
            raise InvalidArgument(f"model '{config.name}': no backend serves platform '{config.platform}'")
        return self._by_files(config.name, model_dir)

    def _by_name(self, kind: str, model: str) -> type[Backend]:
        try:
            return self._by_kind[kind]
        except KeyError:
            known = ", ".join(sorted(self._by_kind)) or "none"
            raise InvalidArgument(
                f"model '{model}': backend '{kind}' is not loaded (loaded: {known})"
            ) from None

    def _by_files(self, model: str, model_dir: Path) -> type[Backend]:
        for cls in self._by_kind.values():
            for pattern in cls.model_files:
                if any(model_dir.glob(f"*/{pattern}")):
                    return cls
        raise InvalidArgument(f"model '{model}': no backend or platform set and no known model file found")
