"""modelplatform's public plugin-author API: import only from here.

What a plugin needs and nothing else: ``hookimpl``; the declarations the
``register_*`` hooks return (HTTP dialects and routes with their neutral
request and reply and what their OpenAPI description says (``RouteDoc``), gRPC services, codecs); the backend contract and its
result types; tensors, requests and responses; model configuration; the
errors; option declarations (``Option``, ``tls_options``), read-only
settings and limits; the DataPlane every dialect calls (its
parts: inference, repository, health, observation) and its read-only views; the ServerContext hooks receive. At most 70 names
(tests/core/test_public_api.py lists them): a helper only one feature needs
lives in the plugin that owns it or in a documented sub-API:

- ``modelplatform.datatypes``: tensor datatypes, their numpy dtypes, sizes
  and BYTES wire form (backends and codecs);
- ``modelplatform.batching``: a dynamic batcher's requests joined along the
  batch axis into one framework call and its outputs cut back per request
  (backends of batching models);
- ``modelplatform.statistics``: the ``ModelStats`` that
  ``dataplane.observation.statistics()`` answers, and a server's latency histogram bounds
  (``set_latency_buckets(server, bounds)``, from the ``configure`` hook), and the
  process's registry of model-defined metric families (``custom_metrics()``:
  Triton's custom metrics, which backends create and the metrics plugin shows);
- ``modelplatform.testing``: an in-process server and a function backend for
  plugin tests;
- ``modelplatform.hookspecs``: every hook, the reference manual.

Everything else in the package is private to the core and may change.

Importing this module to write a backend loads no transport: the gRPC
helpers (``grpc_status``, ``grpc_guard``) load grpc on first use.
"""

from typing import TYPE_CHECKING, Any

from modelplatform._version import __version__
from modelplatform.base.access.scope import check_model_access
from modelplatform.base.broadcasting import Broadcast
from modelplatform.base.codecs import Codec
from modelplatform.base.deadlines import transport_deadline
from modelplatform.base.device import DeviceArray
from modelplatform.base.errors import (
    AlreadyExists,
    Cancelled,
    DeadlineExceeded,
    DecoupledModel,
    ErrorCode,
    Internal,
    InvalidArgument,
    InvalidInput,
    LimitExceeded,
    ModelExecutionError,
    ModelNotFound,
    ModelNotReady,
    ModelPlatformError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PluginError,
    QueueFull,
    RequestTimedOut,
    Unavailable,
    Unsupported,
)
from modelplatform.base.inference import InferenceRequest, InferenceResponse, RequestedOutput, Tensor
from modelplatform.base.logging import LOG_SETTINGS_TOPIC, log_settings, update_log_settings
from modelplatform.base.model_config import EnsembleScheduling, EnsembleStep, ModelConfig, TensorSpec
from modelplatform.base.observing import RequestObserver, RequestScope, counted_in_call
from modelplatform.base.options import Option, tls_options
from modelplatform.base.settings import Limits, Settings
from modelplatform.composition.plugins import hookimpl
from modelplatform.dataplane.context import ServerContext
from modelplatform.dataplane.declarations import (
    BodyPolicy,
    GrpcService,
    HttpDialect,
    HttpReply,
    HttpRequest,
    HttpRoute,
    RouteDoc,
)
from modelplatform.dataplane.facade import DataPlane
from modelplatform.dataplane.views import ModelMetadata, TensorMetadata
from modelplatform.frontends.gate import HeaderCheck, header_check
from modelplatform.models import IndexEntry
from modelplatform.models.backend import Backend, ExecuteResult, PhaseClock, RawResponse, ServerCalls
from modelplatform.models.remote_repository import RepositorySource
from modelplatform.models.views import VersionInfo

if TYPE_CHECKING:
    from modelplatform.frontends.grpc_errors import grpc_guard, grpc_status

#: Names whose modules import grpc: loaded on first use (PEP 562).
_GRPC_NAMES = frozenset({"grpc_guard", "grpc_status"})


def __getattr__(name: str) -> Any:
    if name in _GRPC_NAMES:
        from modelplatform.frontends import grpc_errors  # grpc only for plugins that serve gRPC

        return getattr(grpc_errors, name)
    raise AttributeError(f"module 'modelplatform' has no attribute '{name}'")


__all__ = [
    "AlreadyExists",
    "Backend",
    "DeviceArray",
    "BodyPolicy",
    "Cancelled",
    "Codec",
    "DataPlane",
    "DeadlineExceeded",
    "DecoupledModel",
    "EnsembleScheduling",
    "EnsembleStep",
    "ErrorCode",
    "ExecuteResult",
    "GrpcService",
    "HeaderCheck",
    "HttpDialect",
    "HttpReply",
    "HttpRequest",
    "HttpRoute",
    "RouteDoc",
    "IndexEntry",
    "InferenceRequest",
    "InferenceResponse",
    "Internal",
    "InvalidArgument",
    "InvalidInput",
    "LimitExceeded",
    "Limits",
    "ModelConfig",
    "ModelExecutionError",
    "ModelMetadata",
    "ModelNotFound",
    "ModelNotReady",
    "ModelPlatformError",
    "RequestObserver",
    "RequestScope",
    "check_model_access",
    "counted_in_call",
    "header_check",
    "log_settings",
    "LOG_SETTINGS_TOPIC",
    "Broadcast",
    "update_log_settings",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PhaseClock",
    "PluginError",
    "QueueFull",
    "RawResponse",
    "RepositorySource",
    "RequestTimedOut",
    "RequestedOutput",
    "ServerCalls",
    "Option",
    "ServerContext",
    "Settings",
    "Tensor",
    "TensorMetadata",
    "TensorSpec",
    "Unavailable",
    "Unsupported",
    "VersionInfo",
    "__version__",
    "grpc_guard",
    "grpc_status",
    "hookimpl",
    "tls_options",
    "transport_deadline",
]
