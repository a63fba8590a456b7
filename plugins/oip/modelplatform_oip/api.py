"""The oip plugin's extension API: the one module other plugins import from it.

Extensions of the Open Inference Protocol (the ``binary-data`` codec, the
``repository`` plugin's RPCs) build on these names and on nothing else of
``modelplatform_oip``; every other module of the package is private and may
change. The reference is ``docs/plugins/oip-extension-api.md``.

- Codec contract of the ``oip-rest`` dialect: :class:`RestCodec`,
  :class:`EncodedResponse`, ``DIALECT``, ``BINARY_CODEC``, ``HEADER_LENGTH``.
- Error status: :func:`http_status` (the HTTP status oip-rest answers a
  platform error with).
- The JSON body: :func:`load_json`, :func:`parse_request` (with a
  :data:`BinaryReader` for inputs whose data follow the JSON),
  :func:`response_document`, :func:`json_output`.
- Raw tensor bytes: :func:`raw_array`, :func:`raw_view`.
- Shared-memory regions (regions.py): :class:`RegionCodec`, :class:`OutputPlacement`,
  :data:`RegionReader`, ``REGIONS_DIALECT``, ``REGION_CODEC``, the parameter
  names ``REGION``, ``BYTE_SIZE``, ``OFFSET``, and :func:`in_region`,
  :func:`names_region`, :func:`placed_output`.
- gRPC (imported on first use, so an HTTP-only extension never loads grpc):
  ``GRPC_SERVICE``, ``grpc_messages`` (the generated
  ``inference.GRPCInferenceService`` messages) and :func:`unary_method`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .raw import raw_array, raw_view
from .regions import (
    BYTE_SIZE,
    OFFSET,
    REGION,
    REGION_CODEC,
    REGIONS_DIALECT,
    OutputPlacement,
    RegionCodec,
    RegionReader,
    in_region,
    names_region,
    placed_output,
)
from .rest.codec import BINARY_CODEC, DIALECT, HEADER_LENGTH, EncodedResponse, RestCodec
from .rest.json_codec import BinaryReader, json_output, load_json, parse_request, response_document
from .rest.status import http_status

if TYPE_CHECKING:
    from .protos import grpc_service_pb2 as grpc_messages
    from .rpc.service import SERVICE as GRPC_SERVICE
    from .rpc.service import unary_method

__all__ = [
    "BINARY_CODEC",
    "BYTE_SIZE",
    "OFFSET",
    "REGION",
    "REGIONS_DIALECT",
    "REGION_CODEC",
    "OutputPlacement",
    "RegionCodec",
    "RegionReader",
    "in_region",
    "names_region",
    "placed_output",
    "DIALECT",
    "GRPC_SERVICE",
    "HEADER_LENGTH",
    "BinaryReader",
    "EncodedResponse",
    "RestCodec",
    "grpc_messages",
    "http_status",
    "json_output",
    "load_json",
    "parse_request",
    "raw_array",
    "raw_view",
    "response_document",
    "unary_method",
]

#: name -> (module, attribute or None for the module itself), resolved on first access.
_GRPC_NAMES: dict[str, tuple[str, str | None]] = {
    "GRPC_SERVICE": (".rpc.service", "SERVICE"),
    "grpc_messages": (".protos.grpc_service_pb2", None),
    "unary_method": (".rpc.service", "unary_method"),
}


def __getattr__(name: str) -> Any:
    """The gRPC names, imported when first asked for (PEP 562)."""
    if name not in _GRPC_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attribute = _GRPC_NAMES[name]
    module = importlib.import_module(module_name, __package__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
