"""Which model names a trace setting may name: Triton's check, shared by HTTP and gRPC."""

from __future__ import annotations

from modelplatform import InvalidArgument, ServerContext


def check_model(context: ServerContext, model: str) -> None:
    """A model setting is for a model that is ready now (Triton answers INVALID_ARG otherwise)."""
    if model and not context.dataplane.health.model_ready(model):
        raise InvalidArgument(f"Request for unknown model : {model[:256]}")
