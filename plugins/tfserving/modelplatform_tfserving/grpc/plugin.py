"""Hook implementations of the ``tfserving-grpc`` plugin."""

from __future__ import annotations

from modelplatform import GrpcService, Settings, hookimpl

# A hook implementation both tfserving plugins offer: either alone warms a model up.
from ..protos import POOL
from ..protos import services_pb2 as services_pb2  # the services' descriptors in POOL, for reflection
from ..warmup import warmup_requests as warmup_requests
from .servicer import add_model_service, add_prediction_service, first_task_model, model_named

PROTOCOL = "tfserving_grpc"


@hookimpl
def register_grpc_services(settings: Settings) -> list[GrpcService]:
    return [
        GrpcService(
            "tensorflow.serving.PredictionService",
            add_prediction_service,
            protocol=PROTOCOL,
            inference_methods=dict.fromkeys(("Predict", "Classify", "Regress"), model_named)
            | {"MultiInference": first_task_model},
            categories=dict.fromkeys(("Predict", "Classify", "Regress", "MultiInference"), "inference")
            | {"GetModelMetadata": "metadata"},
            descriptor_pool=POOL,  # its messages live in a pool of their own (protos/__init__.py)
        ),
        # Reloading the model config changes what is served, as the repository API does.
        GrpcService(
            "tensorflow.serving.ModelService",
            add_model_service,
            protocol=PROTOCOL,
            categories={"GetModelStatus": "metadata", "HandleReloadConfigRequest": "model-repository"},
            descriptor_pool=POOL,
        ),
    ]
