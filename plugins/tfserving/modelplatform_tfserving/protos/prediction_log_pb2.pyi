from modelplatform_tfserving.protos import serving_apis_pb2 as _serving_apis_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LogMetadata(_message.Message):
    __slots__ = ("model_spec", "saved_model_tags", "timestamp_secs")
    MODEL_SPEC_FIELD_NUMBER: _ClassVar[int]
    SAVED_MODEL_TAGS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_SECS_FIELD_NUMBER: _ClassVar[int]
    model_spec: _serving_apis_pb2.ModelSpec
    saved_model_tags: _containers.RepeatedScalarFieldContainer[str]
    timestamp_secs: int
    def __init__(self, model_spec: _Optional[_Union[_serving_apis_pb2.ModelSpec, _Mapping]] = ..., saved_model_tags: _Optional[_Iterable[str]] = ..., timestamp_secs: _Optional[int] = ...) -> None: ...

class ClassifyLog(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: _serving_apis_pb2.ClassificationRequest
    response: _serving_apis_pb2.ClassificationResponse
    def __init__(self, request: _Optional[_Union[_serving_apis_pb2.ClassificationRequest, _Mapping]] = ..., response: _Optional[_Union[_serving_apis_pb2.ClassificationResponse, _Mapping]] = ...) -> None: ...

class RegressLog(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: _serving_apis_pb2.RegressionRequest
    response: _serving_apis_pb2.RegressionResponse
    def __init__(self, request: _Optional[_Union[_serving_apis_pb2.RegressionRequest, _Mapping]] = ..., response: _Optional[_Union[_serving_apis_pb2.RegressionResponse, _Mapping]] = ...) -> None: ...

class PredictLog(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: _serving_apis_pb2.PredictRequest
    response: _serving_apis_pb2.PredictResponse
    def __init__(self, request: _Optional[_Union[_serving_apis_pb2.PredictRequest, _Mapping]] = ..., response: _Optional[_Union[_serving_apis_pb2.PredictResponse, _Mapping]] = ...) -> None: ...

class MultiInferenceLog(_message.Message):
    __slots__ = ("request", "response")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    request: _serving_apis_pb2.MultiInferenceRequest
    response: _serving_apis_pb2.MultiInferenceResponse
    def __init__(self, request: _Optional[_Union[_serving_apis_pb2.MultiInferenceRequest, _Mapping]] = ..., response: _Optional[_Union[_serving_apis_pb2.MultiInferenceResponse, _Mapping]] = ...) -> None: ...

class PredictionLog(_message.Message):
    __slots__ = ("log_metadata", "classify_log", "regress_log", "predict_log", "multi_inference_log")
    LOG_METADATA_FIELD_NUMBER: _ClassVar[int]
    CLASSIFY_LOG_FIELD_NUMBER: _ClassVar[int]
    REGRESS_LOG_FIELD_NUMBER: _ClassVar[int]
    PREDICT_LOG_FIELD_NUMBER: _ClassVar[int]
    MULTI_INFERENCE_LOG_FIELD_NUMBER: _ClassVar[int]
    log_metadata: LogMetadata
    classify_log: ClassifyLog
    regress_log: RegressLog
    predict_log: PredictLog
    multi_inference_log: MultiInferenceLog
    def __init__(self, log_metadata: _Optional[_Union[LogMetadata, _Mapping]] = ..., classify_log: _Optional[_Union[ClassifyLog, _Mapping]] = ..., regress_log: _Optional[_Union[RegressLog, _Mapping]] = ..., predict_log: _Optional[_Union[PredictLog, _Mapping]] = ..., multi_inference_log: _Optional[_Union[MultiInferenceLog, _Mapping]] = ...) -> None: ...
