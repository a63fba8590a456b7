"""Hook implementations of the ``tensorflow`` plugin."""

from __future__ import annotations

from modelplatform import Backend, Settings, hookimpl

from .backend import TensorFlowBackend


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [TensorFlowBackend]
