"""Hook implementations of the ``python`` plugin."""

from __future__ import annotations

from modelplatform import Backend, Settings, hookimpl

from .backend import PythonBackend
from .limits import PythonOptions


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [PythonBackend.with_options(PythonOptions.from_settings(settings))]
