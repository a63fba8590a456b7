"""Hook implementations of the ``storage`` plugin: model repositories in object storage."""

from __future__ import annotations

import os
from collections.abc import Sequence

from modelplatform import Option, RepositorySource, Settings, hookimpl

from .locations import parse
from .options import OPTIONS, PLUGIN


@hookimpl
def register_options() -> Sequence[Option]:
    return OPTIONS


@hookimpl
def open_repository(location: str, settings: Settings) -> RepositorySource | None:
    where = parse(location)
    if where is None:
        return None  # not s3://, gs:// or as://: another plugin's scheme
    from .cache import MAX_BYTES_VARIABLE, existing_mirror, open_mirror  # fsspec only when used

    options = settings.options_for(PLUGIN)
    # The resolved option already ranks flag > variable > file: the variable must not outrank a flag.
    env = {name: value for name, value in os.environ.items() if name != MAX_BYTES_VARIABLE}
    return open_mirror(where, env, existing_mirror(settings.model_repository), options)
