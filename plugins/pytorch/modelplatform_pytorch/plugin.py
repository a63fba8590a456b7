"""Hook implementations of the ``pytorch`` plugin."""

from __future__ import annotations

from modelplatform import Backend, Settings, hookimpl

from .backend import PyTorchBackend


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [PyTorchBackend]
