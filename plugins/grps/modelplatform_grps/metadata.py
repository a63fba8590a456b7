"""Server and model metadata as YAML text (grps puts it in ``str_data``)."""

from __future__ import annotations

from typing import Any

import yaml

from modelplatform import DataPlane, NotFound, ServerContext

from .models import split_model


def server_yaml(context: ServerContext) -> str:
    settings = context.settings
    data: dict[str, Any] = {
        "server": context.dataplane.health.server_metadata(),
        "settings": {
            "model_repository": str(settings.model_repository),
            "http_port": settings.http_port,
            "grpc_port": settings.http_port if settings.single_port else settings.grpc_port,
            "model_control_mode": settings.model_control_mode,
            "max_request_bytes": settings.max_request_bytes,
        },
        "models": [
            {"name": e.name, "version": e.version, "state": e.state or "UNKNOWN"}
            for e in context.dataplane.repository.index()
        ],
    }
    return yaml.safe_dump(data, sort_keys=False)


def model_yaml(dataplane: DataPlane, selector: str) -> str:
    """The model's configuration plus its ready versions; NotFound as grps's 404."""
    name, version = split_model(selector)
    try:
        config = dataplane.repository.model_config(name, version)
        meta = dataplane.repository.model_metadata(name, version)
    except NotFound:
        raise NotFound(f"Model not found: '{selector}'") from None
    data = {"name": name, "versions": meta.versions, **config.to_json()}
    return yaml.safe_dump(data, sort_keys=False)
