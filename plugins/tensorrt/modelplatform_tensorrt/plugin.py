"""Hook implementations of the ``tensorrt`` plugin."""

from __future__ import annotations

from modelplatform import Backend, Settings, hookimpl

from .backend import TensorRTBackend


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [TensorRTBackend]
