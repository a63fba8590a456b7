"""Opt-in helpers for testing plugins and models against a real server.

- :func:`free_port`: a TCP port nothing listens on right now (under pytest-xdist,
  from this worker's share of ports).
- :class:`ServerProcess`: ``platform serve`` as a subprocess on free ports,
  waited on until it reports ``server_started``; stopped with SIGTERM.
- :class:`InProcessServer`: the full server (HTTP + gRPC) in the running
  event loop, with extra plugin objects, for tests that need no subprocess.
- :class:`FunctionBackend`: a backend whose model is a Python function,
  registered by name with :func:`function_model`.

For harnesses that drive the real request path without sockets (the fuzzer in
``fuzz/``, benchmarks in ``benchmarks/``; neither may import anything else of
the core but ``modelplatform`` and this module):

- :func:`resolved_settings`: settings as ``platform serve`` resolves them from
  the given values, with no environment variable read.
- :class:`ComposedServer`: the composed server, models loaded, no port opened.
  :meth:`ComposedServer.http` takes a request through the steps both HTTP
  paths take (match, admit, response timeout, the route's scoped handler,
  failure rendered in the dialect's shape: ``frontends/http/dispatch.py``);
  ``context.grpc_services`` register their handlers with any stand-in server.
- :func:`scoped_route`: a route's handler wrapped as the HTTP front end wraps
  it (request scope, observers), to time that wrapper.
- :func:`read_model_config`: a model folder's configuration as the repository
  reads it, validated (raises what a load would).
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from modelplatform.base.errors import ModelExecutionError, ModelPlatformError
from modelplatform.base.inference import InferenceRequest, InferenceResponse, Tensor
from modelplatform.base.model_config import ModelConfig, read_config
from modelplatform.base.observing import RequestObserver, ScopeOpener
from modelplatform.base.settings import Settings
from modelplatform.composition.options import resolve
from modelplatform.composition.plugins import hookimpl
from modelplatform.composition.server import RunningServer, compose, load_initial_models
from modelplatform.dataplane.context import ServerContext
from modelplatform.dataplane.declarations import HttpReply, HttpRequest, HttpRoute
from modelplatform.frontends.http import dispatch
from modelplatform.frontends.http.admission import admitted
from modelplatform.models.backend import Backend, ExecuteResult

#: The metrics plugin's default port: InProcessServer moves it to a free port.
DEFAULT_METRICS_PORT = 8002

ModelFunction = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
#: Process-wide on purpose: a test names its functions before it builds its servers, and
#: the backend finds them by model name (every server of the test serves the same functions).
_FUNCTIONS: dict[str, ModelFunction] = {}


def free_port() -> int:
    """A port free now, from this test process's share of them.

    The port stays free until a server binds it, which takes a moment. Under
    pytest-xdist, worker ``gwI`` of ``N`` (``PYTEST_XDIST_WORKER``,
    ``PYTEST_XDIST_WORKER_COUNT``, inherited by the processes a test starts)
    takes only ports with ``port % N == I``, so two workers never hand out the
    same port in that moment. Candidates are drawn here, not taken from
    ``bind(0)``: Linux offers ``bind(0)`` odd ports only, which left worker
    ``gw0`` of 2 no port of its share. They lie below Linux's default range
    for outgoing connections' ports (32768-60999), so no client connection
    takes one before the server binds it.
    """
    share, workers = _port_share()
    for _ in range(_TRIES):
        port = _candidate(share, workers)
        # Never one handed out lately: a server given it twice (its HTTP and gRPC ports)
        # fails to bind the second.
        if port not in _handed_out and _bindable(port):
            _handed_out.append(port)
            return port
    raise RuntimeError(f"no free port in {_PORTS.start}-{_PORTS.stop - 1} after {_TRIES} tries")


def _candidate(share: int, workers: int) -> int:
    """A random port of ``_PORTS`` in this share."""
    port = _RANDOM.randrange(_PORTS.start, _PORTS.stop)
    port += (share - port) % workers
    return port if port < _PORTS.stop else port - workers


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: Where free ports come from: below the kernel's ports for outgoing connections.
_PORTS = range(20000, 32768)
#: Its own generator: a test that seeds ``random`` must not make every process draw alike.
_RANDOM = random.Random()
#: Candidates tried before giving up (something holds most of the range).
_TRIES = 200
#: The ports this process handed out lately (each is bound by its server within moments).
_handed_out: deque[int] = deque(maxlen=256)


def _port_share() -> tuple[int, int]:
    """(this process's share, shares): (0, 1) outside pytest-xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 0):
        return 0, 1
    return int(worker[2:]) % int(count), int(count)


def function_model(name: str, function: ModelFunction) -> None:
    """Make ``function`` the model behind every config with ``backend: "function"`` named ``name``."""
    _FUNCTIONS[name] = function


class FunctionBackend(Backend):
    """Runs the function registered for the model's name; outputs as declared."""

    kind: ClassVar[str] = "function"

    async def load(self) -> None:
        if self.config.name not in _FUNCTIONS:
            raise ModelExecutionError(self.config.name, KeyError("no function registered"))

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        function = _FUNCTIONS[self.config.name]
        inputs = [request.arrays() for request in batch]
        self.phases.inputs_ready()
        outputs = [self._call(function, arrays) for arrays in inputs]
        self.phases.outputs_started()
        return [self._result(request, out) for request, out in zip(batch, outputs)]

    def _call(self, function: Callable[..., Any], arrays: dict[str, np.ndarray]) -> Any:
        try:
            return function(arrays)
        except ModelPlatformError as error:
            return error
        except Exception as error:  # noqa: BLE001 - the request fails alone
            return ModelExecutionError(self.config.name, error)

    def _result(self, request: InferenceRequest, outputs: Any) -> InferenceResponse | ModelPlatformError:
        if isinstance(outputs, ModelPlatformError):
            return outputs
        try:
            tensors = [Tensor.from_array(n, np.asarray(a)) for n, a in outputs.items()]
        except Exception as error:  # noqa: BLE001 - the request fails alone
            return ModelExecutionError(self.config.name, error)
        return InferenceResponse(request.model_name, "", tensors)


class FunctionBackendPlugin:
    """A plugin object registering :class:`FunctionBackend` (pass to InProcessServer)."""

    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [FunctionBackend]


def _loads_metrics(settings: Settings) -> bool:
    return (
        not settings.plugins or "metrics" in settings.plugins
    ) and "metrics" not in settings.disable_plugins


class InProcessServer:
    """``async with InProcessServer(settings, [plugin]) as server:`` serves until exit."""

    def __init__(self, settings: Settings, extra_plugins: Sequence[object] = ()) -> None:
        metrics = settings.options_for("metrics")
        # Tests run side by side: the default metrics port moves to any free one, unless
        # the metrics plugin is left out (then the settings are used as given).
        if (
            _loads_metrics(settings)
            and metrics.get("metrics_port", DEFAULT_METRICS_PORT) == DEFAULT_METRICS_PORT
        ):
            metrics = {**metrics, "metrics_port": 0}
            settings = dataclasses.replace(
                settings, plugin_options={**settings.plugin_options, "metrics": metrics}
            )
        self.running = RunningServer(compose(settings, extra_plugins))

    @property
    def context(self) -> Any:
        return self.running.context

    async def __aenter__(self) -> InProcessServer:
        await self.running.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.running.stop()


class ServerProcess:
    """``platform serve`` in a subprocess; use as a context manager."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> None:
        self.http_port = free_port()
        self.grpc_port = free_port()
        self.args = ["--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port), *args]
        #: The metrics port, free like the others (a ``--metrics-port`` argument wins over it).
        self.metrics_port = free_port()
        # No drain delay unless a test asks for one: each stop would otherwise serve 5 s more.
        self.env = {
            "MODELPLATFORM_DRAIN_DELAY_SECS": "0",
            "MODELPLATFORM_METRICS_PORT": str(self.metrics_port),
            **os.environ,
            **(env or {}),
        }
        self.timeout = timeout
        self.log_path = Path(tempfile.mkstemp(prefix="modelplatform-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def __enter__(self) -> ServerProcess:
        command = [sys.executable, "-m", "modelplatform", "serve", "--host", "127.0.0.1", *self.args]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self._wait_started()
        return self

    def _wait_started(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if "server_started" in self.log():
                return
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log()}")
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"server did not start in {self.timeout}s:\n{self.log()}")

    def stop(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def resolved_settings(**values: Any) -> Settings:
    """Settings as ``platform serve`` resolves them from ``values`` (checked the same way,
    installed plugins' options included); no ``MODELPLATFORM_*`` variable of this process is read."""
    return resolve(env={}, overrides=values)


def read_model_config(model_dir: Path) -> ModelConfig:
    """``model_dir``'s config.pbtxt as the repository reads it; raises what a load would."""
    return read_config(model_dir)


def scoped_route(route: HttpRoute, protocol: str, observers: Iterable[RequestObserver] = ()) -> HttpRoute:
    """``route`` as the HTTP front end serves it: its handler in a request scope counted under
    ``protocol`` and told to ``observers``. No server: a refusal is counted nowhere."""
    opener = ScopeOpener(list(observers))
    return dispatch.scoped_route(route, protocol, opener, _count_nowhere, Settings().max_request_bytes)


def _count_nowhere(name: str) -> None:
    """A refusal of a route served without a server: nobody keeps counters."""


class ComposedServer:
    """The server composed from ``settings`` and ``extra_plugins``, with no port opened.

    ``await start()`` loads the start-up models and turns the server ready;
    :meth:`http` answers a request as both HTTP paths do; ``context`` is the
    ServerContext plugins get (``context.grpc_services`` add their handlers
    to whatever server object they are given). ``await close()`` unloads.
    """

    def __init__(self, settings: Settings, extra_plugins: Sequence[object] = ()) -> None:
        self._composition = compose(settings, extra_plugins)
        self.context: ServerContext = self._composition.context
        self._http = dispatch.HttpDispatch.of(self.context)

    async def start(self) -> None:
        await load_initial_models(self.context.settings, self._composition.models)
        self.context.dataplane.health.accepting = True

    async def http(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
        query: str = "",
        raised: Callable[[Exception], None] | None = None,
    ) -> HttpReply:
        """The reply to one request (``headers`` in lower case, as both paths hand them on).

        A streamed reply is read to its end here and comes back as one body; a
        failure while it streams is answered as a failure before it would be.
        ``raised`` sees every error the route raised, before it is rendered (one
        that is no platform error the server answers 500: a harness's finding).
        With CORS on, preflights and the origin's headers are answered as on both paths.
        """
        cors, given = self._http.cors, headers or {}
        preflight = None if cors is None else cors.preflight(method, path, given)
        if preflight is not None:
            return preflight
        reply = await self._answer(method, path, body, given, query, raised)
        return reply if cors is None else cors.answered(reply, given)

    async def _answer(
        self,
        method: str,
        path: str,
        body: bytes,
        headers: Mapping[str, str],
        query: str,
        raised: Callable[[Exception], None] | None,
    ) -> HttpReply:
        http = self._http
        match = http.match(method, path)
        if match is None:
            return http.miss(method, path)
        request = HttpRequest(method, path, match.params, headers, body, query)
        refusal, verdict = http.admit(match, request.headers)
        if refusal is not None:
            return refusal

        def failed(error: Exception) -> HttpReply | None:
            if raised is not None:
                raised(error)
            return None

        with admitted(verdict):
            reply = await http.answer(match, request, failed)
            if not reply.streamed:
                return reply
            try:
                chunks = [bytes(chunk) async for chunk in reply.body]  # type: ignore[union-attr]  # reply.streamed: an async iterator
            except Exception as error:  # noqa: BLE001 - rendered as the server renders a route's failure
                failed(error)
                return http.failure(match, error, path)
        return dataclasses.replace(reply, body=b"".join(chunks))

    async def close(self) -> None:
        await self._composition.models.shutdown()
