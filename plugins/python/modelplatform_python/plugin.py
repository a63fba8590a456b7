"""Hook implementations of the ``python`` plugin."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import Backend, Option, Settings, hookimpl

from .backend import PythonBackend
from .limits import OPTIONS, PythonOptions


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def register_backends(settings: Settings) -> list[type[Backend]]:
    return [PythonBackend.with_options(PythonOptions.from_settings(settings))]
