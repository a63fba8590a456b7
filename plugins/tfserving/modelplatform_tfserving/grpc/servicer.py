"""``tensorflow.serving.PredictionService`` and ``ModelService`` over the shared service.

Errors keep their words and map to gRPC codes by one table; MultiInference
and HandleReloadConfigRequest answer UNIMPLEMENTED.
"""

from __future__ import annotations

import functools
from typing import Any

import grpc

from modelplatform import InvalidArgument, ServerContext, grpc_guard

from ..examples import examples_of
from ..protos import error_codes_pb2 as codes
from ..protos import services_pb2_grpc as services
from ..protos import serving_apis_pb2 as apis
from ..servables import Selector
from ..servables import status as model_status
from ..service import Resolved, TfService
from ..signatures import signature_cache
from .metadata import signature_def_map
from .tensor_proto import from_array, to_array

SIGNATURE_DEF = "signature_def"

_STATES = {name: apis.ModelVersionStatus.State.Value(name) for name in apis.ModelVersionStatus.State.keys()}

#: The core's one gRPC error wrapper, in TF Serving's wording for unexpected errors.
rpc = functools.partial(grpc_guard, internal_prefix="Internal error")


def selector(spec: Any) -> Selector:
    choice = spec.WhichOneof("version_choice")
    version = str(spec.version.value) if choice == "version" else ""
    if version.startswith("-"):
        raise InvalidArgument(f"version {version} is not a valid version number")
    return Selector(spec.name, version, spec.version_label if choice == "version_label" else "")


def model_named(request: Any) -> str:
    """The model a Predict, Classify or Regress request names (its refusals count under it)."""
    return str(request.model_spec.name)


def first_task_model(request: Any) -> str:
    """The model a MultiInference request names: its first task's ("" without tasks)."""
    return str(request.tasks[0].model_spec.name) if request.tasks else ""


def model_spec(target: Resolved, signature_name: str) -> Any:
    spec = apis.ModelSpec(name=target.model.name, signature_name=signature_name)
    spec.version.value = int(target.model.version)
    return spec


class PredictionServicer(services.PredictionServiceServicer):
    def __init__(self, context: ServerContext) -> None:
        self.service = TfService(context)

    def _resolve(self, spec: Any) -> Resolved:
        return self.service.resolve(selector(spec), spec.signature_name)

    @rpc
    async def Predict(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        target = self._resolve(request.model_spec)
        types = {a.alias: a.spec.datatype for a in target.signature.inputs}
        inputs = {}
        for position, (alias, proto) in enumerate(request.inputs.items()):
            datatype, array = to_array(proto, self.service.limits, alias)
            if alias in types and datatype != types[alias]:
                raise InvalidArgument(
                    f"Expects arg[{position}] to be {types[alias]} but {datatype} is provided"
                )
            inputs[alias] = array
        outputs = await self.service.predict(target, inputs, list(request.output_filter))
        by_alias = {a.alias: a.spec.datatype for a in target.signature.outputs}
        response = apis.PredictResponse(model_spec=model_spec(target, target.signature.name))
        for alias, array in outputs.items():
            response.outputs[alias].CopyFrom(from_array(array, by_alias[alias]))
        return response

    @rpc
    async def Regress(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        target = self._resolve(request.model_spec)
        values = await self.service.regress(target, examples_of(request.input))
        response = apis.RegressionResponse(model_spec=model_spec(target, target.signature.name))
        response.result.regressions.extend(apis.Regression(value=v) for v in values)
        return response

    @rpc
    async def Classify(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        target = self._resolve(request.model_spec)
        results = await self.service.classify(target, examples_of(request.input))
        response = apis.ClassificationResponse(model_spec=model_spec(target, target.signature.name))
        for pairs in results:
            classes = [apis.Class(label=label, score=score) for label, score in pairs]
            response.result.classifications.add().classes.extend(classes)
        return response

    @rpc
    async def GetModelMetadata(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        fields = list(request.metadata_field)
        if not fields:
            raise InvalidArgument("GetModelMetadataRequest must specify at least one metadata_field")
        for name in fields:
            if name != SIGNATURE_DEF:
                raise InvalidArgument(f"Metadata field {name} is not supported")
        target = self.service.resolve(selector(request.model_spec), "")
        response = apis.GetModelMetadataResponse(model_spec=model_spec(target, ""))
        response.metadata[SIGNATURE_DEF].Pack(signature_def_map(self.service.signatures.of(target.model)))
        return response

    async def MultiInference(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "MultiInference is not implemented")


class ModelServicer(services.ModelServiceServicer):
    def __init__(self, context: ServerContext) -> None:
        self.dataplane = context.dataplane
        self.signatures = signature_cache(context)

    @rpc
    async def GetModelStatus(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        statuses = model_status(self.dataplane, selector(request.model_spec), self.signatures)
        response = apis.GetModelStatusResponse()
        for item in statuses:
            response.model_version_status.add(
                version=int(item.version),
                state=_STATES[item.state],
                status=apis.StatusProto(
                    error_code=codes.Code.Value(item.error_code), error_message=item.error_message
                ),
            )
        return response

    async def HandleReloadConfigRequest(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            "HandleReloadConfigRequest is not implemented; use the model repository API",
        )


def add_prediction_service(server: grpc.aio.Server, context: ServerContext) -> None:
    services.add_PredictionServiceServicer_to_server(PredictionServicer(context), server)


def add_model_service(server: grpc.aio.Server, context: ServerContext) -> None:
    services.add_ModelServiceServicer_to_server(ModelServicer(context), server)
