"""The plugin-author API's boundary (issue 27 point 5): ``modelplatform.__all__`` names
exactly what a third party needs, at most 70 names; single-feature helpers live in the
plugin that owns them or in a documented sub-API, each with its own exact list."""

from __future__ import annotations

import importlib

import modelplatform

#: At most this many names in ``modelplatform.__all__``.
MOST_NAMES = 70

PUBLIC = {
    # hooks and declarations
    "hookimpl", "Option", "tls_options", "ServerContext", "HttpDialect", "HttpRoute", "HttpRequest", "HttpReply",
    "RouteDoc", "BodyPolicy", "GrpcService", "Codec", "Broadcast",
    # the backend contract, tensors, requests and responses
    "Backend", "ServerCalls", "ExecuteResult", "PhaseClock", "RawResponse", "Tensor", "InferenceRequest",
    "InferenceResponse", "RequestedOutput", "DeviceArray",
    # model configuration, settings and limits
    "ModelConfig", "TensorSpec", "EnsembleScheduling", "EnsembleStep", "Settings", "Limits",
    # the dataplane and its read-only views
    "DataPlane", "ModelMetadata", "TensorMetadata", "VersionInfo", "IndexEntry", "RepositorySource",
    # errors
    "ErrorCode", "ModelPlatformError", "AlreadyExists", "Cancelled", "DeadlineExceeded",
    "DecoupledModel", "Internal", "InvalidArgument", "InvalidInput", "LimitExceeded",
    "ModelExecutionError", "ModelNotFound", "ModelNotReady", "NotFound", "PayloadTooLarge",
    "PermissionDenied", "PluginError", "QueueFull", "RequestTimedOut", "Unavailable", "Unsupported",
    # request scope, access and deadlines at a transport's edge
    "RequestObserver", "RequestScope", "counted_in_call", "check_model_access", "HeaderCheck",
    "header_check", "transport_deadline", "grpc_guard", "grpc_status",
    # run-time log settings (Triton's logging extension)
    "LOG_SETTINGS_TOPIC", "log_settings", "update_log_settings",
    "__version__",
}  # fmt: skip

SUB_APIS = {
    "modelplatform.datatypes": {
        "CONFIG_TO_DATATYPE", "DATATYPES", "DATATYPE_TO_CONFIG", "aligned", "as_bytes_array", "datatype_of",
        "decode_bytes", "element_count", "element_size", "encode_bytes", "from_buffer", "numpy_dtype",
    },
    "modelplatform.statistics": {
        "DEFAULT_LATENCY_BUCKETS_US", "ModelStats", "checked_buckets", "set_latency_buckets",
        # model-defined families (Triton's custom metrics, issue 29)
        "COUNTER", "GAUGE", "HISTOGRAM", "CustomFamily", "CustomMetric", "FamilySnapshot",
        "MetricSample", "custom_metrics",
    },
    "modelplatform.batching": {"join_inputs", "joinable", "rows", "split_outputs"},
}  # fmt: skip


def test_the_public_api_is_exactly_these_names_and_small():
    names = modelplatform.__all__
    assert len(names) == len(set(names)), "a name is listed twice"
    assert set(names) == PUBLIC
    assert len(names) <= MOST_NAMES


def test_every_public_name_resolves():
    missing = [name for name in modelplatform.__all__ if not hasattr(modelplatform, name)]
    assert not missing


def test_each_sub_api_is_exactly_its_names_and_none_is_also_in_the_main_api():
    for module_name, expected in SUB_APIS.items():
        module = importlib.import_module(module_name)
        assert set(module.__all__) == expected, module_name
        assert all(hasattr(module, name) for name in module.__all__), module_name
        assert not expected & PUBLIC, module_name


def test_the_sub_apis_are_documented_where_the_api_is():
    for module_name in SUB_APIS:
        assert f"``{module_name}``" in (modelplatform.__doc__ or ""), module_name
