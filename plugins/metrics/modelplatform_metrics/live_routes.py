"""The live page at ``/`` and its data at ``/live/data``, on the HTTP port."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

import orjson

from modelplatform import HttpReply, HttpRequest, HttpRoute, ServerContext

from .live import LiveBoard

DIALECT = "live"
DATA_PATH = "/live/data"


def board_of(context: ServerContext) -> LiveBoard:
    """The server's one LiveBoard, made on first use."""
    return context.shared(LiveBoard, lambda: LiveBoard(context.dataplane))


def live_routes(context: ServerContext) -> Sequence[HttpRoute]:
    board = board_of(context)
    page = resources.files("modelplatform_metrics").joinpath("static/live.html").read_bytes()

    async def show_page(request: HttpRequest) -> HttpReply:
        return HttpReply(200, page, "text/html; charset=utf-8")

    async def data(request: HttpRequest) -> HttpReply:
        return HttpReply(200, orjson.dumps(await board.snapshot()), "application/json")

    return [
        HttpRoute(("GET",), "/", show_page, max_body_bytes=0, name="live page", category="metrics"),
        HttpRoute(("GET",), DATA_PATH, data, max_body_bytes=0, name="live page", category="metrics"),
    ]
