"""Opt-in helpers for testing plugins and models against a real server.

- :func:`free_port`: a TCP port nothing listens on right now.
- :class:`ServerProcess`: ``platform serve`` as a subprocess on free ports,
  waited on until it reports ``server_started``; stopped with SIGTERM.
- :class:`InProcessServer`: the full server (HTTP + gRPC) in the running
  event loop, with extra plugin objects, for tests that need no subprocess.
- :class:`FunctionBackend`: a backend whose model is a Python function,
  registered by name with :func:`function_model`.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from modelplatform.base.errors import ModelExecutionError, ModelPlatformError
from modelplatform.base.inference import InferenceRequest, InferenceResponse, Tensor
from modelplatform.base.settings import Settings
from modelplatform.composition.plugins import hookimpl
from modelplatform.composition.server import RunningServer, compose
from modelplatform.models.backend import Backend, ExecuteResult

#: The metrics plugin's default port: InProcessServer moves it to a free port.
DEFAULT_METRICS_PORT = 8002

ModelFunction = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
#: Process-wide on purpose: a test names its functions before it builds its servers, and
#: the backend finds them by model name (every server of the test serves the same functions).
_FUNCTIONS: dict[str, ModelFunction] = {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


class InProcessServer:
    """``async with InProcessServer(settings, [plugin]) as server:`` serves until exit."""

    def __init__(self, settings: Settings, extra_plugins: Sequence[object] = ()) -> None:
        metrics = settings.options_for("metrics")
        if (
            metrics.get("metrics_port", DEFAULT_METRICS_PORT) == DEFAULT_METRICS_PORT
        ):  # tests run side by side
            metrics = {**metrics, "metrics_port": 0}  # any free port
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
