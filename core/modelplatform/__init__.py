"""modelplatform's public plugin-author API. Import only from here.

Everything not listed in ``__all__`` is private to the core and may change.
"""

from ._version import __version__
from .backend import Backend, ExecuteResult, RawResponse
from .codecs import Codec
from .context import ServerContext
from .dataplane import DataPlane, ModelMetadata, TensorMetadata, VersionInfo
from .dtypes import (
    CONFIG_TO_DATATYPE,
    DATATYPE_TO_CONFIG,
    DATATYPES,
    as_bytes_array,
    datatype_of,
    decode_bytes,
    element_size,
    encode_bytes,
    from_buffer,
    numpy_dtype,
)
from .errors import (
    AlreadyExists,
    Cancelled,
    DeadlineExceeded,
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
    Unavailable,
    Unsupported,
)
from .declarations import BodyPolicy, GrpcService, HttpDialect, HttpReply, HttpRequest, HttpRoute, json_error
from .grpc_server import grpc_guard, grpc_status
from .inference import InferenceRequest, InferenceResponse, RequestedOutput, Tensor
from .model_config import ModelConfig, TensorSpec, parse_json, parse_text
from .models import IndexEntry, LoadOverride, ModelManager, ModelState, ModelVersion
from .plugins import hookimpl
from .settings import Limits, Settings
from .validation import element_count

__all__ = [
    "CONFIG_TO_DATATYPE",
    "DATATYPES",
    "DATATYPE_TO_CONFIG",
    "AlreadyExists",
    "Backend",
    "Cancelled",
    "Codec",
    "DataPlane",
    "DeadlineExceeded",
    "ErrorCode",
    "ExecuteResult",
    "GrpcService",
    "BodyPolicy",
    "HttpDialect",
    "HttpReply",
    "HttpRequest",
    "HttpRoute",
    "IndexEntry",
    "InferenceRequest",
    "InferenceResponse",
    "Internal",
    "InvalidArgument",
    "InvalidInput",
    "LimitExceeded",
    "Limits",
    "LoadOverride",
    "ModelConfig",
    "ModelExecutionError",
    "ModelManager",
    "ModelMetadata",
    "ModelNotFound",
    "ModelNotReady",
    "ModelPlatformError",
    "ModelState",
    "ModelVersion",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PluginError",
    "QueueFull",
    "RawResponse",
    "RequestedOutput",
    "ServerContext",
    "Settings",
    "Tensor",
    "TensorMetadata",
    "TensorSpec",
    "Unavailable",
    "Unsupported",
    "VersionInfo",
    "__version__",
    "as_bytes_array",
    "datatype_of",
    "decode_bytes",
    "element_count",
    "element_size",
    "encode_bytes",
    "from_buffer",
    "grpc_guard",
    "grpc_status",
    "hookimpl",
    "json_error",
    "numpy_dtype",
    "parse_json",
    "parse_text",
]
