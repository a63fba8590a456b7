"""ModelInfer's bytes on the wire, read and written around protobuf's copies of the tensors.

protobuf copies a ``bytes`` field when it parses a message, again when
Python reads the field, and the encoder grows its buffer (copying) while it
writes a large one: for a 16 MiB tensor that was most of a gRPC call's time.
Here the tensors stay where they are: a large request is walked field by
field at the top level only, its ``raw_input_contents`` (field 7) become
views over the received bytes and everything else (names, shapes,
parameters: small) is parsed by protobuf as usual; a response is its
metadata serialised by protobuf followed by each ``raw_output_contents``
entry (field 6) framed by hand, joined with one copy of each tensor.
Protobuf accepts fields in any order and a repeated field's entries
wherever they come, so both are the messages Triton's proto describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..protos import grpc_service_pb2 as pb

if TYPE_CHECKING:  # repeats.py reads this module's fields
    from .repeats import RequestTemplate

#: Below this size protobuf's own parse is as cheap as walking the fields.
WALK_FROM_BYTES = 64 * 1024
#: ModelInferRequest.raw_input_contents and ModelInferResponse.raw_output_contents.
RAW_INPUT_FIELD = 7
RAW_INPUT_TAG = (RAW_INPUT_FIELD << 3) | 2
RAW_OUTPUT_KEY = bytes([(6 << 3) | 2])
_LENGTH_DELIMITED = 2


class InferCall(NamedTuple):
    """A ModelInfer request: its message without the raw inputs, the raw inputs, the bytes it
    came in, and the template those bytes matched (repeats.py; then ``raw`` is empty).
    A tuple: made on every call, it costs less than a frozen dataclass."""

    message: pb.ModelInferRequest
    raw: Sequence[bytes | memoryview]
    data: bytes = b""
    template: RequestTemplate | None = None

    @property
    def model_name(self) -> str:
        return self.message.model_name


def read_infer_request(data: bytes) -> InferCall:
    """The request in ``data``; a malformed message raises protobuf's DecodeError as before."""
    if len(data) >= WALK_FROM_BYTES:
        walked = _walk(data)
        if walked is not None:
            rest, raw = walked
            return InferCall(pb.ModelInferRequest.FromString(rest), raw, data)
    message = pb.ModelInferRequest.FromString(data)
    return InferCall(message, message.raw_input_contents, data)


def write_infer_response(metadata: bytes, raw: Sequence[bytes | memoryview]) -> bytes:
    """A serialised ModelInferResponse without raw outputs (``metadata``), followed by one
    raw_output_contents entry per tensor."""
    parts: list[bytes | memoryview] = [metadata]
    for contents in raw:
        if type(contents) is bytes and len(contents) < 0x80:  # a small tensor: framed without a call
            parts += (_SMALL_FRAMES[len(contents)], contents)
        else:
            parts += (RAW_OUTPUT_KEY, _varint(_length(contents)), contents)
    return b"".join(parts)


def _length(contents: bytes | memoryview) -> int:
    return contents.nbytes if isinstance(contents, memoryview) else len(contents)


def _walk(data: bytes) -> tuple[bytes, list[memoryview]] | None:
    """(every field but the raw inputs, the raw inputs as views); None when not well formed."""
    fields = top_level_fields(data)
    if fields is None:
        return None
    view = memoryview(data)
    rest = [view[start:end] for tag, start, _, end in fields if tag != RAW_INPUT_TAG]
    raw = [view[value:end] for tag, _, value, end in fields if tag == RAW_INPUT_TAG]
    return b"".join(rest), raw


def top_level_fields(data: bytes) -> list[tuple[int, int, int, int]] | None:
    """(tag, start, value start, end) of each top-level field of the message in ``data``, in
    order (a length-delimited value starts after its length); None when it is not well formed
    (protobuf then says what is wrong)."""
    fields = []
    position, end = 0, len(data)
    while position < end:
        start = position
        tag, position = read_varint(data, position)
        value = position
        wire_type = tag & 7
        if position < 0:
            return None
        if wire_type == _LENGTH_DELIMITED:
            length, value = read_varint(data, position)
            if value < 0 or length > end - value:
                return None
            position = value + length
        elif wire_type == 0:
            _, position = read_varint(data, position)
        elif wire_type in (1, 5):
            position += 8 if wire_type == 1 else 4
        else:
            return None  # groups (never in these messages) or garbage
        if position < 0 or position > end:
            return None
        fields.append((tag, start, value, position))
    return fields


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    """(value, next position); position -1 when the varint runs past the end or is too long."""
    value = shift = 0
    end = min(len(data), position + 10)
    while position < end:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return 0, -1


#: The varints of 0-127: one byte each (a small tensor's length), made once.
_ONE_BYTE_VARINTS = tuple(bytes([value]) for value in range(0x80))
#: A raw output entry's key and length for each length 0-127: a small tensor's frame, made once.
_SMALL_FRAMES = tuple(RAW_OUTPUT_KEY + varint for varint in _ONE_BYTE_VARINTS)


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _ONE_BYTE_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
