"""The ``/v2`` routes of the Open Inference Protocol over HTTP, each declared once.

Paths, status codes and bodies follow Triton (protocol-notes A1-A4, A8):
health answers 200 or 400 with an empty body; errors are
``{"error": "..."}``; no Content-Type is required on infer. Infer is hot:
the core also answers it on its fast lane, from this same declaration.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import orjson

from modelplatform import (
    HttpReply,
    HttpRequest,
    HttpRoute,
    InvalidArgument,
    Limits,
    ModelMetadata,
    ServerContext,
)

from ..regions import Regions
from .codec import BINARY_CODEC, DIALECT, HEADER_LENGTH, EncodedResponse, RestCodec
from .json_codec import encode_json, load_json, parse_request
from .logging_ext import logging_routes
from .schemas import INFER, MODEL_METADATA, SERVER_METADATA, STATISTICS, answers, health

MODEL = "/v2/models/{model}"
VERSIONED = "/v2/models/{model}/versions/{version:int}"
#: Answers this large are written part by part (header, then each binary output), never joined.
STREAM_FROM_BYTES = 1 << 20
#: Empty answers still name a content type.
EMPTY_TYPE = "text/plain; charset=utf-8"

__all__ = ["DIALECT", "oip_routes"]


def _json(data: Any, status: int = 200) -> HttpReply:
    return HttpReply(status, orjson.dumps(data))


def _empty(ok: bool) -> HttpReply:
    return HttpReply(200 if ok else 400, b"", EMPTY_TYPE)


def metadata_json(meta: ModelMetadata) -> dict[str, Any]:
    return {
        "name": meta.name,
        "versions": meta.versions,
        "platform": meta.platform,
        "inputs": [{"name": t.name, "datatype": t.datatype, "shape": t.shape} for t in meta.inputs],
        "outputs": [{"name": t.name, "datatype": t.datatype, "shape": t.shape} for t in meta.outputs],
    }


class OipRoutes:
    """Handlers bound to one server's dataplane and codecs (resolved at start-up)."""

    def __init__(self, context: ServerContext) -> None:
        self.inference = context.dataplane.inference
        self.repository = context.dataplane.repository
        self.health = context.dataplane.health
        self.observation = context.dataplane.observation
        self.limits = Limits.from_settings(context.settings)
        binary = context.codecs.get(DIALECT, BINARY_CODEC)
        self.binary: RestCodec | None = binary if isinstance(binary, RestCodec) else None
        self.regions = Regions(context)
        # Codecs written before regions existed take six arguments: keep serving them.
        self.binary_reads_regions = self.binary is not None and (
            "read_region" in inspect.signature(self.binary.decode).parameters
        )

    async def server_metadata(self, request: HttpRequest) -> HttpReply:
        return _json(self.health.server_metadata())

    async def live(self, request: HttpRequest) -> HttpReply:
        return _empty(self.health.live)

    async def ready(self, request: HttpRequest) -> HttpReply:
        return _empty(self.health.ready())

    async def model_ready(self, request: HttpRequest) -> HttpReply:
        if self.health.model_ready(*_model(request)):
            return _empty(True)
        return _json({"error": "Model version not ready"}, 400)

    async def model_metadata(self, request: HttpRequest) -> HttpReply:
        return _json(metadata_json(self.repository.model_metadata(*_model(request))))

    async def model_config(self, request: HttpRequest) -> HttpReply:
        return _json(self.repository.model_config(*_model(request)).to_json())

    async def statistics(self, request: HttpRequest) -> HttpReply:
        stats = await self.observation.statistics(*_model(request))
        return _json({"model_stats": [s.to_json() for s in stats]})

    async def infer(self, request: HttpRequest) -> HttpReply:
        encoded = await self.answer(request.headers, request.body, *_model(request))
        return HttpReply(200, encoded.body, encoded.content_type, encoded.headers)

    async def answer(
        self, headers: Mapping[str, str], body: Any, model: str, version: str
    ) -> EncodedResponse:
        """Decode, infer, encode: the body is one bytes object, or parts when large.

        The core has already undone a Content-Encoding and compresses the answer on Accept-Encoding.
        """
        try:
            inference = self._decode(body, headers.get(HEADER_LENGTH), model, version)
        except InvalidArgument as error:
            raise error.naming_model(model) from None
        response = await self.regions.infer(inference, "HTTP end point")
        if self.binary is not None and self.binary.wants_response(inference):
            encoded = self.binary.encode(response, inference)
        else:
            encoded = encode_json(response)
        kind, extra = encoded.content_type, encoded.headers
        if encoded.size >= STREAM_FROM_BYTES:  # written part by part, never joined
            parts: list[bytes | memoryview] = (
                encoded.body if isinstance(encoded.body, list) else [encoded.body]
            )
            return EncodedResponse(parts, kind, extra)
        return EncodedResponse(encoded.joined(), kind, extra)

    def _decode(self, body: Any, header_length: str | None, model: str, version: str) -> Any:
        if header_length is None:
            return parse_request(
                load_json(body), model, version, self.limits, read_region=self.regions.read_input
            )
        return self._decode_binary(body, header_length, model, version)

    def _decode_binary(self, body: bytes | bytearray, header_length: str, model: str, version: str) -> Any:
        if self.binary is None:
            raise InvalidArgument(
                f"'{HEADER_LENGTH}' was sent but the binary tensor data extension is not enabled"
            )
        try:
            length = int(header_length)
        except ValueError:
            raise InvalidArgument(f"Unable to parse {HEADER_LENGTH} '{header_length}'") from None
        if not 0 <= length <= len(body):
            raise InvalidArgument(f"inference header size should be in range (0, {len(body)}), got: {length}")
        config = self.repository.model_config(model, version)
        if not self.binary_reads_regions:
            return self.binary.decode(body, length, model, version, config, self.limits)
        return self.binary.decode(
            body, length, model, version, config, self.limits, read_region=self.regions.read_input
        )


def _model(request: HttpRequest) -> tuple[str, str]:
    """(model, version) from the path; both empty on the server-wide statistics route."""
    params = request.params
    return params.get("model", ""), params.get("version", "")


def oip_routes(context: ServerContext) -> list[HttpRoute]:
    routes = OipRoutes(context)
    declared = [
        HttpRoute(("GET",), "/v2", routes.server_metadata, category="metadata",
                  doc=answers("Server metadata", SERVER_METADATA)),
        HttpRoute(("GET",), "/v2/health/live", routes.live, category="health", doc=health("Server live")),
        HttpRoute(("GET",), "/v2/health/ready", routes.ready, category="health", doc=health("Server ready")),
        HttpRoute(("GET",), "/v2/models/stats", routes.statistics, category="statistics",
                  doc=answers("Every model's statistics", STATISTICS)),
    ]  # fmt: skip
    for prefix in (MODEL, VERSIONED):
        declared += [
            HttpRoute(("GET",), prefix, routes.model_metadata, category="metadata",
                      doc=answers("Model metadata", MODEL_METADATA)),
            HttpRoute(("GET",), f"{prefix}/ready", routes.model_ready, category="health",
                      doc=health("Model ready")),
            HttpRoute(("GET",), f"{prefix}/config", routes.model_config, category="model-config",
                      doc=answers("Model configuration", {"type": "object"})),
            HttpRoute(("GET",), f"{prefix}/stats", routes.statistics, category="statistics",
                      doc=answers("Model statistics", STATISTICS)),
            HttpRoute(("POST",), f"{prefix}/infer", routes.infer, hot=True, model_param="model",
                      category="inference", doc=INFER),
        ]  # fmt: skip
    return declared + logging_routes(context.broadcast)
