"""Hook implementations of the ``onnxruntime`` plugin."""

from __future__ import annotations

from modelplatform import Backend, Settings, hookimpl

from .backend import OnnxRuntimeBackend


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [OnnxRuntimeBackend]
