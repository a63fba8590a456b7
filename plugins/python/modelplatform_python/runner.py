"""The one interface behind which a python-model instance runs.

:class:`~modelplatform_python.backend.PythonBackend` picks one runner at load
and hands every call to it:

- :class:`~modelplatform_python.thread_runner.ThreadRunner`: a ``Model`` in the
  server process (inline on the loop or on the instance's thread; the default);
- :class:`~modelplatform_python.process_runner.ProcessRunner`: a ``Model`` in a
  child process (``python.instance_kind: process``);
- :class:`~modelplatform_python.triton_runner.TritonRunner`: a
  ``TritonPythonModel`` written for Triton's python backend.

The methods mirror :class:`modelplatform.Backend`, so a runner is what a
backend would be if it ran only one kind of model file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

from modelplatform import ExecuteResult, InferenceRequest, InferenceResponse, PhaseClock, RawResponse


class Runner(Protocol):
    """Runs one instance of one model version; every method is called on the event loop."""

    #: Where ``execute`` hands inputs to the model's code and gets its outputs back.
    phases: PhaseClock
    #: Whether ``stream`` may answer several times (a generator or decoupled model; after load).
    streams: bool

    async def load(self) -> None:
        """Prepare to serve; raising fails the model's load."""

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        """One response or error per request, in order: a bad request fails alone."""

    def stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        """Several responses for one request (a generator model); others give one."""

    async def handle_raw(self, body: bytes, headers: Mapping[str, str]) -> RawResponse:
        """The model's own wire format (its ``http()`` method), or ``Unsupported``."""

    async def unload(self) -> None:
        """Release what ``load`` took; also called after a load that failed half-way."""
