"""The ``/v2`` routes of the Open Inference Protocol over HTTP.

Paths, status codes and bodies follow Triton (protocol-notes A1-A4, A8):
health answers 200 or 400 with an empty body; errors are
``{"error": "..."}``; no Content-Type is required on infer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import structlog
from sanic import Blueprint, HTTPResponse, Request

from modelplatform import (
    FastResponse,
    FastRoute,
    InvalidArgument,
    ModelMetadata,
    ModelPlatformError,
    ServerContext,
    json_error,
)

from .body import compress, decoded_body, response_encoding
from .codec import BINARY_CODEC, DIALECT, HEADER_LENGTH, EncodedResponse, Limits, RestCodec
from .json_codec import encode_json, load_json, parse_request
from .response import OipResponse
from .status import http_status
from .transfer import STREAM_FROM_BYTES, send_parts

log = structlog.get_logger("modelplatform_oip.rest")

MODEL = "/v2/models/<model:str>"
VERSIONED = "/v2/models/<model:str>/versions/<version:int>"

__all__ = ["DIALECT", "build_blueprint"]


def _json(data: Any, status: int = 200) -> HTTPResponse:
    return OipResponse(orjson.dumps(data), status=status, content_type="application/json")


#: Empty answers still name a content type (Sanic would send the text "None").
EMPTY_TYPE = "text/plain; charset=utf-8"


def _empty(ok: bool) -> HTTPResponse:
    return HTTPResponse(status=200 if ok else 400, content_type=EMPTY_TYPE)


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
        self.dataplane = context.dataplane
        self.limits = Limits.from_settings(context.settings)
        self.max_body = context.settings.max_request_bytes
        binary = context.codecs.get(DIALECT, BINARY_CODEC)
        self.binary: RestCodec | None = binary if isinstance(binary, RestCodec) else None

    async def server_metadata(self, request: Request) -> HTTPResponse:
        return _json(self.dataplane.server_metadata())

    async def live(self, request: Request) -> HTTPResponse:
        return _empty(self.dataplane.live)

    async def ready(self, request: Request) -> HTTPResponse:
        return _empty(self.dataplane.ready())

    async def model_ready(self, request: Request, model: str, version: int | None = None) -> HTTPResponse:
        if self.dataplane.model_ready(model, _v(version)):
            return HTTPResponse(status=200, content_type=EMPTY_TYPE)
        return json_error("Model version not ready", 400)

    async def model_metadata(self, request: Request, model: str, version: int | None = None) -> HTTPResponse:
        return _json(metadata_json(self.dataplane.model_metadata(model, _v(version))))

    async def model_config(self, request: Request, model: str, version: int | None = None) -> HTTPResponse:
        return _json(self.dataplane.model_config(model, _v(version)).to_json())

    async def infer(self, request: Request, model: str, version: int | None = None) -> HTTPResponse:
        encoded = await self.answer(request.headers, request.body, model, _v(version))
        if isinstance(encoded.body, list):
            return await send_parts(request, encoded)
        headers = encoded.headers or None
        return OipResponse(encoded.body, headers=headers, content_type=encoded.content_type)

    async def fast_infer(
        self, parameters: dict[str, str], headers: Mapping[str, str], body: bytes
    ) -> FastResponse:
        """The fast lane's ``infer``: the same answer, errors rendered here as ``_on_error`` does."""
        model, version = parameters["model"], parameters.get("version", "")
        try:
            encoded = await self.answer(headers, body, model, version)
        except ModelPlatformError as error:
            versioned = f"/versions/{version}" if version else ""
            _log_refusal(error, model, f"/v2/models/{model}{versioned}/infer")
            return FastResponse.from_sanic(json_error(error.message, http_status(error)))
        return FastResponse(200, encoded.body, encoded.content_type, encoded.headers)

    async def answer(
        self, headers: Mapping[str, str], body: bytes, model: str, version: str
    ) -> EncodedResponse:
        """Decode, infer, encode: the body is one bytes object, or parts when large and uncompressed."""
        body = decoded_body(body, headers.get("content-encoding"), self.max_body)
        try:
            inference = self._decode(body, headers.get(HEADER_LENGTH), model, version)
        except InvalidArgument as error:
            raise error.naming_model(model) from None
        response = await self.dataplane.infer(inference)
        if self.binary is not None and self.binary.wants_response(inference):
            encoded = self.binary.encode(response, inference)
        else:
            encoded = encode_json(response)
        accept = headers.get("accept-encoding")
        encoding = response_encoding(accept) if accept else None
        kind, extra = encoded.content_type, encoded.headers
        if encoding is not None:
            compressed = compress(encoded.joined(), encoding)
            return EncodedResponse(compressed, kind, {**extra, "Content-Encoding": encoding})
        if encoded.size >= STREAM_FROM_BYTES:  # written part by part, never joined
            parts = encoded.body if isinstance(encoded.body, list) else [encoded.body]
            return EncodedResponse(parts, kind, extra)
        return EncodedResponse(encoded.joined(), kind, extra)

    async def statistics(
        self, request: Request, model: str = "", version: int | None = None
    ) -> HTTPResponse:
        stats = await self.dataplane.statistics(model, _v(version))
        return _json({"model_stats": [s.to_json() for s in stats]})

    def _decode(self, body: Any, header_length: str | None, model: str, version: str) -> Any:
        if header_length is None:
            return parse_request(load_json(body), model, version, self.limits)
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
        config = self.dataplane.model_config(model, version)
        return self.binary.decode(body, length, model, version, config, self.limits)


def _v(version: int | None) -> str:
    return "" if version is None else str(version)


async def _on_error(request: Request, error: ModelPlatformError) -> HTTPResponse:
    _log_refusal(error, request.match_info.get("model", ""), request.path)
    return json_error(error.message, http_status(error))


def _log_refusal(error: ModelPlatformError, model: str, path: str) -> None:
    if not error.logged:  # refused while decoding, before the dataplane saw it
        log.info("request_failed", model=model, path=path, code=error.code.value, error=error.message)


def fast_routes(context: ServerContext) -> list[FastRoute]:
    """The infer routes again, for the fast lane (same handler logic, no Sanic request)."""
    routes = OipRoutes(context)
    return [
        FastRoute("POST", "/v2/models/{model}/infer", routes.fast_infer),
        FastRoute("POST", "/v2/models/{model}/versions/{version:int}/infer", routes.fast_infer),
    ]


def build_blueprint(context: ServerContext) -> Blueprint:
    routes = OipRoutes(context)
    bp = Blueprint(DIALECT)
    bp.add_route(routes.server_metadata, "/v2", methods=["GET"], name="server_metadata")
    bp.add_route(routes.live, "/v2/health/live", methods=["GET"], name="health_live")
    bp.add_route(routes.ready, "/v2/health/ready", methods=["GET"], name="health_ready")
    bp.add_route(routes.statistics, "/v2/models/stats", methods=["GET"], name="statistics_all")
    for prefix in (MODEL, VERSIONED):
        suffix = "v" if prefix == VERSIONED else ""
        bp.add_route(routes.model_metadata, prefix, methods=["GET"], name=f"model_metadata{suffix}")
        bp.add_route(routes.model_ready, f"{prefix}/ready", methods=["GET"], name=f"model_ready{suffix}")
        bp.add_route(routes.model_config, f"{prefix}/config", methods=["GET"], name=f"model_config{suffix}")
        bp.add_route(routes.statistics, f"{prefix}/stats", methods=["GET"], name=f"statistics{suffix}")
        # ctx_body_buffer: a large body arrives as one buffer, not joined chunks (no copy).
        bp.add_route(
            routes.infer, f"{prefix}/infer", methods=["POST"], name=f"model_infer{suffix}",
            ctx_body_buffer=True,
        )
    bp.exception(ModelPlatformError)(_on_error)
    return bp
