"""Protocol-neutral request and response objects.

Every dialect decodes its wire form into these and encodes them back; the
dataplane, schedulers and backends see nothing else. Tensor data is always a
numpy array shaped like ``shape`` (BYTES as an object array of ``bytes``), so
binary and raw paths can hand the backend views over the request body.
This module imports no sanic, grpc or protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from modelplatform.base.dtypes import datatype_of

if TYPE_CHECKING:
    from modelplatform.base.deadlines import Deadline
    from modelplatform.base.device import DeviceArray

Parameters = dict[str, Any]


@dataclass(slots=True)
class Tensor:
    """A named, typed n-dimensional array plus its protocol parameters.

    ``device`` is set when the values are in GPU memory (a client's CUDA
    shared memory): ``data`` is then a read-only stand-in holding no values,
    and only backends with ``accepts_device_memory`` ever see such a tensor
    (base/device.py).
    """

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: np.ndarray
    parameters: Parameters = field(default_factory=dict)
    device: DeviceArray | None = None

    @classmethod
    def from_array(cls, name: str, array: np.ndarray, datatype: str | None = None) -> Tensor:
        """Wrap an array; the datatype is inferred unless given (BF16 must be given)."""
        return cls(name, datatype or datatype_of(array), tuple(array.shape), array)


@dataclass(slots=True)
class RequestedOutput:
    """An output the client asked for, with its per-output parameters.

    ``destination`` is memory the client already set aside for this output (a
    shared-memory window; only the shared-memory codec sets it). A backend MAY
    write the output there and return an array that is a view of it, saving a
    copy; a backend that ignores it is still correct, since the output is
    copied there after inference. It is writable, and a backend must never
    write past its end.

    ``device_destination`` is the same offer in GPU memory (a CUDA shared-memory
    window), made only to backends with ``accepts_device_memory``: such a
    backend may write the output there and return a tensor whose ``device``
    is that array.
    """

    name: str
    parameters: Parameters = field(default_factory=dict)
    destination: memoryview | None = None
    device_destination: DeviceArray | None = None


@dataclass(slots=True)
class InferenceRequest:
    """One inference request, whatever protocol it came in on.

    ``model_version`` is ``""`` when the client let the server choose.
    ``outputs`` is ``None`` when the client asked for every output.
    ``deadline`` is set by the dataplane (deadlines.deadline_for), not by
    dialects: past it, no scheduler hands the request to a backend.
    ``arrived_ns`` is set by the dataplane too.
    ``layout`` is for codecs that rebuild repeated calls from a template: one
    hashable object standing for everything the model's checks look at (input
    names, datatypes, shapes and element counts, requested output names), the
    same object for every request built from that template. The dataplane
    remembers the layouts that passed a model's checks (validation.RequestRules).
    """

    model_name: str
    inputs: list[Tensor]
    model_version: str = ""
    id: str = ""
    parameters: Parameters = field(default_factory=dict)
    outputs: list[RequestedOutput] | None = None
    deadline: Deadline | None = None
    #: ``time.perf_counter_ns()`` when the dataplane received it (0: not yet); queue time starts here.
    arrived_ns: int = 0
    layout: object | None = None

    def input(self, name: str) -> Tensor | None:
        return next((t for t in self.inputs if t.name == name), None)

    def arrays(self) -> dict[str, np.ndarray]:
        """Inputs as a name -> array dict (what python models receive)."""
        return {t.name: t.data for t in self.inputs}


@dataclass(slots=True)
class InferenceResponse:
    """The answer to one request: outputs in model-declared or requested order."""

    model_name: str
    model_version: str
    outputs: list[Tensor]
    id: str = ""
    parameters: Parameters = field(default_factory=dict)
    #: The last response of its request, known as it is sent (a decoupled model's
    #: final flag; a unary answer). A stream may also end after an unmarked one.
    final: bool = False

    def output(self, name: str) -> Tensor | None:
        return next((t for t in self.outputs if t.name == name), None)
