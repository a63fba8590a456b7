"""``/v2/systemsharedmemory/...`` and ``/v2/cudasharedmemory/...`` over HTTP, as Triton serves them.

Status answers a JSON array of regions; register takes ``{"key", "offset",
"byte_size"}`` (CUDA: ``{"raw_handle": {"b64"}, "device_id", "byte_size"}``);
register and unregister answer 200 with an empty body. Errors are
``{"error": "..."}`` with oip-rest's status table.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from modelplatform import HttpReply, HttpRequest, HttpRoute, InvalidArgument, RouteDoc

from .operations import SharedMemoryOperations

DIALECT = "shared-memory"
SYSTEM_PREFIX = "/v2/systemsharedmemory"
CUDA_PREFIX = "/v2/cudasharedmemory"
REGION = "/region/{region}"
EMPTY_TYPE = "text/plain; charset=utf-8"
#: A register body is a few numbers and a key: anything larger is not one.
MAX_BODY_BYTES = 64 * 1024


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = orjson.loads(request.body or b"{}")
    except orjson.JSONDecodeError as error:
        raise InvalidArgument(f"failed to parse the request JSON body: {error}") from None
    if not isinstance(body, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return body


def _done() -> HttpReply:
    return HttpReply(200, b"", EMPTY_TYPE)


def _raw_handle(region: str, body: dict[str, Any]) -> bytes:
    handle = body.get("raw_handle")
    encoded = handle.get("b64") if isinstance(handle, dict) else None
    if not isinstance(encoded, str):
        raise InvalidArgument(f"shared memory region '{region}': 'raw_handle' must be {{\"b64\": string}}")
    try:
        # Triton's C++ clients (perf_analyzer) encode with libb64, which breaks lines every
        # 72 characters; Triton's decoder skips the line breaks, and so does this one.
        return base64.b64decode("".join(encoded.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"shared memory region '{region}': 'raw_handle' is not valid base64") from None


class SharedMemoryRoutes:
    def __init__(self, operations: SharedMemoryOperations) -> None:
        self.ops = operations

    async def system_status(self, request: HttpRequest) -> HttpReply:
        regions = self.ops.system_status(request.params.get("region", ""))
        body = [{"name": r.name, "key": r.key, "offset": r.offset, "byte_size": r.byte_size} for r in regions]
        return HttpReply(200, orjson.dumps(body))

    async def system_register(self, request: HttpRequest) -> HttpReply:
        body = _body(request)
        await self.ops.register_system(
            request.params["region"], body.get("key"), body.get("offset", 0), body.get("byte_size")
        )
        return _done()

    async def system_unregister(self, request: HttpRequest) -> HttpReply:
        await self.ops.unregister_system(request.params.get("region", ""))
        return _done()

    async def cuda_status(self, request: HttpRequest) -> HttpReply:
        regions = self.ops.cuda_status(request.params.get("region", ""))
        body = [{"name": r.name, "device_id": r.device_id, "byte_size": r.byte_size} for r in regions]
        return HttpReply(200, orjson.dumps(body))

    async def cuda_register(self, request: HttpRequest) -> HttpReply:
        region, body = request.params["region"], _body(request)
        await self.ops.register_cuda(
            region, _raw_handle(region, body), body.get("device_id"), body.get("byte_size")
        )
        return _done()

    async def cuda_unregister(self, request: HttpRequest) -> HttpReply:
        await self.ops.unregister_cuda(request.params.get("region", ""))
        return _done()


def shared_memory_routes(operations: SharedMemoryOperations) -> list[HttpRoute]:
    routes = SharedMemoryRoutes(operations)
    return _family(
        SYSTEM_PREFIX, "system", routes.system_status, routes.system_register, routes.system_unregister
    ) + _family(CUDA_PREFIX, "cuda", routes.cuda_status, routes.cuda_register, routes.cuda_unregister)


#: Triton's restricted-API category of every shared-memory route and RPC.
CATEGORY = "shared-memory"


_STATUS = RouteDoc(responses={200: {"type": "array", "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "byte_size": {"type": "integer"}}}}})  # fmt: skip
#: Triton's register bodies: system regions name a key and offset, CUDA ones an IPC handle.
_REGISTER_BODY = {
    "system": {"type": "object", "required": ["key", "byte_size"], "properties": {
        "key": {"type": "string"}, "offset": {"type": "integer"}, "byte_size": {"type": "integer"}}},
    "cuda": {"type": "object", "required": ["raw_handle", "byte_size"], "properties": {
        "raw_handle": {"type": "object", "properties": {"b64": {"type": "string"}}},
        "device_id": {"type": "integer"}, "byte_size": {"type": "integer"}}},
}  # fmt: skip
_DONE = {200: None}


def _family(prefix: str, kind: str, status: Any, register: Any, unregister: Any) -> list[HttpRoute]:
    """Triton's five routes of one kind of shared memory, each with a name saying what it does."""
    small = MAX_BODY_BYTES
    registering = RouteDoc(request=_REGISTER_BODY[kind], responses=_DONE, response_type=EMPTY_TYPE)
    done = RouteDoc(responses=_DONE, response_type=EMPTY_TYPE)
    return [
        HttpRoute(("GET",), f"{prefix}/status", status, name=f"{kind} shared memory status", category=CATEGORY,
                  doc=_STATUS),
        HttpRoute(("GET",), f"{prefix}{REGION}/status", status, name=f"{kind} shared memory region status",
                  category=CATEGORY, doc=_STATUS),
        HttpRoute(
            ("POST",), f"{prefix}{REGION}/register", register,
            max_body_bytes=small, name=f"{kind} shared memory register", category=CATEGORY, doc=registering,
        ),
        HttpRoute(
            ("POST",), f"{prefix}/unregister", unregister,
            max_body_bytes=small, name=f"{kind} shared memory unregister all", category=CATEGORY, doc=done,
        ),
        HttpRoute(
            ("POST",), f"{prefix}{REGION}/unregister", unregister,
            max_body_bytes=small, name=f"{kind} shared memory unregister", category=CATEGORY, doc=done,
        ),
    ]  # fmt: skip
