"""ModelInfer calls that repeat: the same metadata around new tensor bytes.

A client calls the same model with the same input names, datatypes, shapes,
parameters and requested outputs, call after call; only the raw tensor bytes
differ. tritonclient writes the message's fields in field order, so all of
that is one byte prefix, followed by one ``raw_input_contents`` entry per
input. Decoding it again on every call (protobuf's parse, then a Tensor per
input with its checks) was about a quarter of the time our ModelInfer handler
spent on a small call (docs/performance.md, issue 32, fourth session).

A *template* keeps what one fully decoded call produced, with the call's
byte layout. A later call whose bytes equal the template's everywhere but in
the tensor payloads (same length, same prefix, same entry headers at the same
places) is the same message with other tensor values, so it becomes a new
request from the template and views over its own bytes: no parse, no checks
to repeat. Anything else (another shape, a parameter more, an ``id``) is
decoded the usual way, and may become a template itself.

Replies repeat too: the metadata part of a response (model, version, output
names, datatypes, shapes) is serialised once per distinct one and reused.

Both stores are bounded and start over when full, so a client that never
repeats costs one small walk per call and no memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from modelplatform import InferenceRequest, InferenceResponse, RequestedOutput, Tensor
from modelplatform.datatypes import aligned, from_buffer

from ..protos import grpc_service_pb2 as pb
from .wire import RAW_INPUT_TAG, InferCall, top_level_fields

#: Distinct request layouts kept (per server); the store starts over beyond this.
MAX_TEMPLATES = 64
#: Distinct reply metadata kept; the store starts over beyond this.
MAX_HEADS = 256
#: A call whose metadata (everything but the tensor bytes) is larger is not kept: the store
#: holds at most MAX_TEMPLATES * MAX_PREFIX_BYTES of what clients sent.
MAX_PREFIX_BYTES = 4096


@dataclass(frozen=True, slots=True)
class _RawInput:
    """Where one input's bytes lie in a matching call, and what they are."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    dtype: np.dtype
    count: int
    offset: int
    #: Misaligned at this offset, and small: copied to aligned memory (datatypes.aligned).
    #: Every call's bytes object puts its payload at the same alignment (CPython allocates
    #: bytes at a fixed header offset from an aligned block), so the template's first call
    #: tells.
    realign: bool


@dataclass(frozen=True, slots=True)
class RequestTemplate:
    """One call's layout and decoded metadata; ``request`` rebuilds it over other bytes."""

    message: pb.ModelInferRequest  # the metadata, parsed once (the model a refusal is counted under)
    length: int
    prefix: bytes
    headers: tuple[tuple[int, bytes], ...]  # each raw entry's tag and length bytes, by position
    inputs: tuple[_RawInput, ...]
    parameters: dict[str, Any]
    outputs: tuple[str, ...] | None
    #: The requests' InferenceRequest.layout: this template's, by identity.
    layout: object = field(default_factory=object)

    @property
    def model_name(self) -> str:
        return self.message.model_name

    def request(self, data: bytes) -> InferenceRequest:
        """The call in ``data`` (which :meth:`RequestTemplates.match` matched to this template):
        fresh objects, tensors viewing ``data`` (small misaligned ones copied: datatypes.aligned)."""
        inputs = []
        for i in self.inputs:  # loops, not comprehensions: each of those is a frame per call
            array = np.frombuffer(data, i.dtype, i.count, i.offset).reshape(i.shape)
            if i.realign:
                array = aligned(array)
            inputs.append(Tensor(i.name, i.datatype, i.shape, array))
        outputs = None
        if self.outputs is not None:
            outputs = []
            for name in self.outputs:
                outputs.append(RequestedOutput(name))
        message = self.message
        return InferenceRequest(
            message.model_name,
            inputs,
            message.model_version,
            "",
            dict(self.parameters),
            outputs,
            layout=self.layout,
        )


class RequestTemplates:
    """The templates of one server's recent ModelInfer layouts, found by length then bytes."""

    def __init__(self, capacity: int = MAX_TEMPLATES) -> None:
        self._capacity = capacity
        self._by_length: dict[int, list[RequestTemplate]] = {}
        self._count = 0

    def match(self, data: bytes) -> RequestTemplate | None:
        """The template whose call ``data`` repeats: same length (the key), same bytes but for
        the tensor payloads (its prefix, then each raw entry's header at its place)."""
        for template in self._by_length.get(len(data), ()):
            if not data.startswith(template.prefix):
                continue
            for at, header in template.headers:  # checked here, not in a method: once per call
                if not data.startswith(header, at):
                    break
            else:
                return template
        return None

    def learn(self, call: InferCall, request: InferenceRequest) -> None:
        """Keep the layout of a call that decoded as ``request`` (before anything changed it)."""
        if not call.raw:  # typed contents or shared memory only: nothing to walk for
            return
        template = template_of(call.data, call.message, request)
        if template is None:
            return
        if self._count >= self._capacity:
            self._by_length.clear()
            self._count = 0
        self._by_length.setdefault(template.length, []).append(template)
        self._count += 1


def template_of(
    data: bytes, message: pb.ModelInferRequest, request: InferenceRequest
) -> RequestTemplate | None:
    """A template for this call, or None when it has nothing a later call could share:
    an ``id`` (clients that set one set a new one per call), inputs that are not all raw
    fixed-size bytes (typed contents, shared memory, BYTES), output parameters, metadata
    over MAX_PREFIX_BYTES, or a layout other than the metadata followed by the raw entries."""
    if message.id or any(o.parameters for o in message.outputs):
        return None
    layout = _layout(data)
    if layout is None:
        return None
    prefix_end, entries = layout
    if prefix_end > MAX_PREFIX_BYTES or len(entries) != len(request.inputs):
        return None
    inputs = []
    for tensor, (_, payload, end) in zip(request.inputs, entries):
        raw = _raw_input(data, tensor, payload, end)
        if raw is None:
            return None
        inputs.append(raw)
    return RequestTemplate(
        message=message,
        length=len(data),
        prefix=data[:prefix_end],
        headers=tuple((start, data[start:payload]) for start, payload, _ in entries),
        inputs=tuple(inputs),
        parameters=dict(request.parameters),
        outputs=None if request.outputs is None else tuple(o.name for o in request.outputs),
    )


def _raw_input(data: bytes, tensor: Tensor, payload: int, end: int) -> _RawInput | None:
    """The input as the decoder reads raw bytes (``from_buffer``): fixed-size datatypes only,
    never one from shared memory (its parameters name the region) or on a device."""
    if tensor.parameters or tensor.device is not None or tensor.datatype == "BYTES":
        return None
    count = tensor.data.size
    dtype = from_buffer(memoryview(data)[payload:end], tensor.datatype, count).dtype  # and its checks
    view = np.frombuffer(data, dtype, count, payload)
    realign = aligned(view) is not view
    return _RawInput(tensor.name, tensor.datatype, tuple(tensor.shape), dtype, count, payload, realign)


def _layout(data: bytes) -> tuple[int, list[tuple[int, int, int]]] | None:
    """(where the raw entries start, [(entry start, payload start, payload end)]) when the
    message is its other fields followed by raw entries only; else None."""
    fields = top_level_fields(data)
    if not fields:
        return None
    first = next((i for i, field in enumerate(fields) if field[0] == RAW_INPUT_TAG), None)
    if first is None or any(field[0] != RAW_INPUT_TAG for field in fields[first:]):
        return None
    return fields[first][1], [(start, value, end) for _, start, value, end in fields[first:]]


class ReplyHeads:
    """Serialised reply metadata, made once per distinct (model, version, outputs' names,
    datatypes and shapes); replies with parameters or an ``id`` are made each time."""

    def __init__(self, metadata: Callable[[InferenceResponse], pb.ModelInferResponse]) -> None:
        self._metadata = metadata
        self._heads: dict[tuple[object, ...], bytes] = {}

    def head(self, response: InferenceResponse) -> bytes:
        if response.parameters or response.id:
            return self._metadata(response).SerializeToString()
        parts: list[object] = [response.model_name, response.model_version]
        for t in response.outputs:  # a loop, not a comprehension: one frame less per call
            parts.append((t.name, t.datatype, t.shape))
        key = tuple(parts)
        try:
            head = self._heads.get(key)
        except TypeError:  # a shape given as a list: cannot be a key
            return self._metadata(response).SerializeToString()
        if head is None:
            head = self._metadata(response).SerializeToString()
            if len(self._heads) >= MAX_HEADS:
                self._heads.clear()
            self._heads[key] = head
        return head
