"""Hook implementations of the ``ensemble`` plugin."""

from __future__ import annotations

from modelplatform import Backend, Settings, hookimpl

from .backend import EnsembleBackend


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [EnsembleBackend]
