"""HTTP streaming: how a client asks for it, and writing one chunk per response.

Each chunk is the JSON of one GrpsMessage (status stamped SUCCESS), with no
delimiter, as grps writes them; a ``bin_data`` request streams raw bytes.
An error after the first chunk ends the stream with a FAILURE message.
"""

from __future__ import annotations

from typing import Any

from sanic import Request

from modelplatform import InferenceResponse, InvalidArgument, ModelPlatformError

from ..converter import single_bytes_of, to_message
from ..options import GrpsOptions
from ..runtime import GrpsRuntime, Observation
from ..status import from_error, success
from .json_io import dump_message


def wants_streaming(options: GrpsOptions, request: Request, data: dict[str, Any] | None) -> bool:
    key = options.streaming_ctrl_key
    if options.streaming_ctrl_mode == "query_param":
        return str(request.args.get(key, "")).lower() == "true"
    if options.streaming_ctrl_mode == "header_param":
        return str(request.headers.get(key, "")).lower() == "true"
    value = (data or {}).get(key, False)
    if not isinstance(value, bool):
        raise InvalidArgument(f"'{key}' in the body must be a JSON boolean")
    return value


def chunk(response: InferenceResponse, kind: str) -> bytes:
    if kind == "bin_data":
        raw = single_bytes_of(response)
        if raw is not None:
            return raw
    return dump_message(success(to_message(response, kind)))


async def stream_http(
    runtime: GrpsRuntime, request: Request, inference: Any, kind: str, seen: Observation
) -> None:
    async with runtime.stream(inference) as responses:
        # Fetch the first response before the headers: an early error keeps its status.
        item = await anext(responses, None)
        http = await request.respond(content_type=runtime.options.streaming_content_type)
        try:
            while item is not None:
                await http.send(chunk(item, kind))
                item = await anext(responses, None)
        except ModelPlatformError as error:
            seen.failed = True
            await http.send(dump_message(from_error(error)))
        await http.eof()
