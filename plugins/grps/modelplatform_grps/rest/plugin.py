"""Hook implementations of the ``grps-rest`` plugin."""

from __future__ import annotations

from collections.abc import Sequence

from modelplatform import HttpDialect, Option, ServerContext, Settings, hookimpl

from ..options import OPTIONS
from ..runtime import runtime
from ..status import status_code
from .routes import DIALECT, GRPS_MESSAGE, PREFIX, grps_routes, render_error


@hookimpl
def register_http_dialects(settings: Settings) -> list[HttpDialect]:
    return [
        HttpDialect(
            DIALECT,
            grps_routes,
            status_code,
            render_error,
            path_prefix=f"{PREFIX}/",
            protocol="grps_http",
            error_schema=GRPS_MESSAGE,
        )
    ]


@hookimpl
async def startup(server: ServerContext) -> None:
    # The monitor page is served over HTTP only: this plugin feeds it.
    runtime(server).sampler.start()


@hookimpl
async def shutdown(server: ServerContext) -> None:
    await runtime(server).sampler.stop()


@hookimpl
def register_options() -> Sequence[Option]:
    # The same declarations as the other grps transport's: one [plugins.grps] table (options.py).
    return OPTIONS
