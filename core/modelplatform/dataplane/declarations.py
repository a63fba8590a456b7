"""What ``register_*`` hooks return: plain, frozen declarations with no transport in them.

An HTTP dialect declares each of its routes once (:class:`HttpRoute`): method,
path template, handler, body policy and whether it is hot. Handlers take a
neutral :class:`HttpRequest` and return a neutral :class:`HttpReply`; the core
serves every route through Sanic and the hot ones also on its fast lane, from
the same declaration, so a dialect never knows which path served it.

Path templates: ``/v2/models/{model}/versions/{version:int}/infer``.
``{name}`` matches one non-empty path segment without ``/``; ``{name:int}``
digits only (handed on without leading zeros); ``{name:path}`` the rest of
the path, slashes included (last only); ``{name:<regex>}`` a segment part
matching the regular expression. Parameters are percent-decoded. Literal text
and parameters may share a segment (``/v1/models/{model:[^/:]+}:predict``).
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import orjson

if TYPE_CHECKING:
    from modelplatform.base.errors import ModelPlatformError
    from modelplatform.dataplane.context import ServerContext

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})


class BodyPolicy(enum.Enum):
    """How a route receives its request body."""

    #: The whole body in one buffer (``bytes`` or one ``bytearray`` filled as it
    #: arrives, never a join of chunks), so codecs can hand out zero-copy views.
    BUFFERED = "buffered"
    #: ``HttpRequest.chunks`` yields the body as it arrives; ``body`` is empty.
    STREAMED = "streamed"


#: A buffered request body: ``bytes``, or the one ``bytearray`` it was read (or inflated) into.
Body = bytes | bytearray
#: A reply body: one buffer, parts written in order under one Content-Length
#: (no join), or an async iterator of chunks sent as they come (chunked encoding).
ReplyBody = bytes | Sequence[bytes | memoryview] | AsyncIterator[bytes]


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request as every route handler sees it, whichever path served it.

    ``headers`` maps lower-case names to the first value; ``path`` is the raw
    (still percent-encoded) path; ``params`` are the template's parameters.
    """

    method: str
    path: str
    params: Mapping[str, str]
    headers: Mapping[str, str]
    body: Body = b""
    query_string: str = ""
    chunks: AsyncIterator[bytes] | None = None

    @property
    def query(self) -> Mapping[str, str]:
        """Query parameters, the first value of each name (parsed when asked for)."""
        if not self.query_string:
            return _NO_HEADERS
        pairs = parse_qsl(self.query_string)
        return {name: value for name, value in reversed(pairs)}


@dataclass(frozen=True, slots=True)
class HttpReply:
    """What a handler answers; the core writes it on whichever path served the request."""

    status: int = 200
    body: ReplyBody = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=lambda: _NO_HEADERS)

    @property
    def streamed(self) -> bool:
        return hasattr(self.body, "__anext__")


HttpHandler = Callable[[HttpRequest], Awaitable[HttpReply]]
#: A JSON Schema (draft 2020-12, as OpenAPI 3.1 uses), as plain data.
JsonSchema = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RouteDoc:
    """What a route's description says, for the OpenAPI documents (all optional).

    A route without one is still documented (its method, path, parameters and
    its dialect's error shape); this adds what only the dialect knows.
    ``request``: the JSON body's schema (None: no documented body).
    ``responses``: status -> the body's schema in ``response_type`` (None: an
    empty body); errors not listed fall under the dialect's error schema.
    ``query``: query parameter -> its schema. ``model_request``: the request
    schema for one model, from its metadata (the per-model documents: an
    infer route names that model's inputs, datatypes and shapes).
    """

    summary: str = ""
    description: str = ""
    request: JsonSchema | None = None
    request_type: str = "application/json"
    responses: Mapping[int, JsonSchema | None] = field(default_factory=dict)
    response_type: str = "application/json"
    #: Other content types a success answer may come in, its body not described (OIP's
    #: binary tensor extension answers ``application/octet-stream``).
    other_types: tuple[str, ...] = ()
    query: Mapping[str, JsonSchema] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    #: (the model's ModelMetadata) -> its request schema; None: ``request`` for every model.
    model_request: Callable[[Any], JsonSchema] | None = None


@dataclass(frozen=True, slots=True)
class HttpRoute:
    """One route, declared once.

    ``methods`` are upper case. ``max_body_bytes`` lowers the server's
    ``max_request_bytes`` for this route (never raises it). ``hot`` routes are
    also answered by the fast lane when a request is plain enough for it (see
    docs/architecture.md); their handlers must not depend on the query string
    (the lane passes requests with one to Sanic). ``ignore_case`` matches the
    template's literal text case-insensitively (TF Serving does).
    ``model_param`` makes it an inference route: an error answer the statistics
    never saw (a body the dialect could not decode, a model it resolved itself,
    a body over the limit) counts as a failure ``OTHER`` of the model that
    path parameter names ("": a route whose model is named in the body; such
    refusals count under model "").
    """

    methods: tuple[str, ...]
    path: str
    handler: HttpHandler
    body: BodyPolicy = BodyPolicy.BUFFERED
    max_body_bytes: int | None = None
    hot: bool = False
    ignore_case: bool = False
    #: The path parameter naming the model; None: not an inference route.
    model_param: str | None = None
    #: Says who declared the route in start-up errors (e.g. which model's custom path).
    name: str = ""
    #: The API category restrictions and API keys name it by (access/categories.py:
    #: ``inference``, ``metadata``, ``health`` ...). Every route declares one; an unknown
    #: name stops start-up, and with access control on a route without one is refused.
    category: str = ""
    #: What the OpenAPI documents say of it beyond method and path (None: only those).
    doc: RouteDoc | None = None

    def describe(self) -> str:
        return f"{self.path} ({self.name})" if self.name else self.path


#: Triton's error body as a JSON Schema: ``{"error": "..."}``.
TRITON_ERROR_SCHEMA: JsonSchema = MappingProxyType({
    "type": "object",
    "properties": {"error": {"type": "string"}},
    "required": ["error"],
})  # fmt: skip


def json_error(message: str, status: int) -> HttpReply:
    """Triton's error body, ``{"error": "..."}``: the default error shape."""
    return HttpReply(status, orjson.dumps({"error": message}))


@dataclass(frozen=True, slots=True)
class HttpDialect:
    """A protocol served on the one HTTP port.

    ``routes(context)`` is called once at start-up and returns the dialect's
    routes. ``error_status`` maps a platform error to the dialect's HTTP status;
    ``render_error(message, status)`` builds its error reply (default:
    Triton's ``{"error": ...}``). Every error of a dialect's routes goes
    through these two, on either path. Errors raised before any route matched
    (404, 405, a body over the limit) are rendered by the dialect whose
    ``path_prefix`` owns the path, else in Triton's shape. ``extensions`` are
    the server-metadata extension names it implements. ``protocol`` is the
    label its requests are counted under (``oip_http``; default: ``name``).
    ``error_schema`` is the JSON Schema of its error bodies (default: Triton's
    ``{"error": "..."}``), and ``title`` its name in the OpenAPI documents.
    """

    name: str
    routes: Callable[[ServerContext], Sequence[HttpRoute]]
    error_status: Callable[[ModelPlatformError], int]
    render_error: Callable[[str, int], HttpReply] = json_error
    extensions: tuple[str, ...] = ()
    path_prefix: str = ""
    protocol: str = ""
    error_schema: JsonSchema = field(default_factory=lambda: TRITON_ERROR_SCHEMA)
    title: str = ""


@dataclass(frozen=True, slots=True)
class GrpcService:
    """A gRPC service declaration.

    ``add_to_server(server, context)`` is called once inside the running loop
    and registers the service's handlers on the ``grpc.aio.Server`` (generated
    ``add_XServicer_to_server`` or a generic handler). ``name`` is the full
    service name (``inference.GRPCInferenceService``); several declarations may
    share one when each handles different methods. ``protocol`` is the label
    its requests are counted under (``oip_grpc``; default: ``name``).
    ``inference_methods`` names its unary inference methods, each with how its
    request message names the model: a call of one that fails (an abort, a
    status other than OK) without the statistics counting it counts as a
    failure ``OTHER`` of that model. ``categories`` gives every method it
    serves its API category (``{"ModelInfer": "inference"}``, see
    HttpRoute.category).
    """

    name: str
    add_to_server: Callable[[Any, ServerContext], None]
    extensions: tuple[str, ...] = ()
    protocol: str = ""
    #: Method name (``ModelInfer``) -> the model its request message names.
    inference_methods: Mapping[str, Callable[[Any], str]] = field(default_factory=dict)
    #: Method name -> its API category (access/categories.py).
    categories: Mapping[str, str] = field(default_factory=dict)
    #: The descriptor pool that holds the service's protobuf descriptors, for gRPC server
    #: reflection (None: protobuf's default pool; TF Serving keeps a private one).
    descriptor_pool: Any = None
