"""Declared routes as the core serves them: one declaration, both paths, one error shape.

A test dialect owns ``/t/``; its errors read ``{"oops": ...}`` so every test
sees whose renderer answered. Clients are raw sockets, to control framing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from modelplatform import (
    BodyPolicy,
    HttpDialect,
    HttpReply,
    HttpRequest,
    HttpRoute,
    InvalidArgument,
    PluginError,
    Settings,
    hookimpl,
)
from modelplatform.testing import InProcessServer, free_port


async def _numbers(request: HttpRequest) -> HttpReply:
    count = int(request.params["count"])
    if count < 0:
        raise InvalidArgument("count must not be negative")

    async def chunks():
        for number in range(count):
            if number == 3 and request.params.get("fail"):
                raise RuntimeError("broke mid-stream")
            yield b"%d;" % number

    # Only tests look at which path served a request: the lane hands handlers a plain dict.
    served_by = "lane" if type(request.headers) is dict else "sanic"
    return HttpReply(200, chunks(), "text/plain", {"x-served-by": served_by})


async def _upload(request: HttpRequest) -> HttpReply:
    assert request.chunks is not None and request.body == b""
    sizes = [len(chunk) async for chunk in request.chunks]
    return HttpReply(200, json.dumps({"bytes": sum(sizes)}).encode())


async def _echo(request: HttpRequest) -> HttpReply:
    answer = {"params": dict(request.params), "query": dict(request.query), "size": len(request.body)}
    return HttpReply(200, json.dumps(answer).encode())


def _routes(context: object) -> list[HttpRoute]:
    return [
        HttpRoute(("POST",), "/t/numbers/{count:[-0-9]+}", _numbers, hot=True),
        HttpRoute(("POST",), "/t/numbers/{count:[-0-9]+}/{fail}", _numbers, hot=True),
        HttpRoute(("POST",), "/t/upload", _upload, body=BodyPolicy.STREAMED),
        HttpRoute(("POST",), "/t/small", _echo, max_body_bytes=10),
        HttpRoute(("GET", "POST"), "/t/Echo/{name}", _echo, ignore_case=True),
    ]


def _render(message: str, status: int) -> HttpReply:
    return HttpReply(status, json.dumps({"oops": message}).encode())


def _dialect() -> HttpDialect:
    return HttpDialect("routetest", _routes, lambda error: 422, _render, path_prefix="/t/")


class RouteTestPlugin:
    @staticmethod
    @hookimpl
    def register_http_dialects(settings: Settings) -> list[HttpDialect]:
        return [_dialect()]


class ClashingPlugin:
    @staticmethod
    @hookimpl
    def register_http_dialects(settings: Settings) -> list[HttpDialect]:
        clash = [HttpRoute(("POST",), "/t/small", _echo)]
        return [HttpDialect("clash", lambda context: clash, lambda error: 400)]


def _settings(tmp_path: Path) -> Settings:
    return Settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(),
                    grpc_port=free_port(), plugins=("oip-rest",))  # fmt: skip


@pytest.fixture
async def port(tmp_path: Path):
    settings = _settings(tmp_path)
    async with InProcessServer(settings, [RouteTestPlugin]):
        yield settings.http_port


def request(method: str, path: str, body: bytes = b"", *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: t", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def answer(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        status_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        if headers.get("transfer-encoding") == "chunked":
            body = await asyncio.wait_for(_dechunk(reader), 5)
        else:
            body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), 5)
        return int(status_line.split()[1]), headers, body
    finally:
        writer.close()


async def _dechunk(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
        body += await reader.readexactly(size)
        await reader.readexactly(2)
    await reader.readexactly(2)
    return body


async def test_a_streamed_reply_is_the_same_from_the_lane_and_from_sanic(port):
    lane = await answer(port, request("POST", "/t/numbers/5"))
    sanic = await answer(port, request("POST", "/t/numbers/5", b"", "Connection: close"))
    assert lane[0] == sanic[0] == 200
    assert lane[2] == sanic[2] == b"0;1;2;3;4;"
    assert lane[1]["transfer-encoding"] == sanic[1]["transfer-encoding"] == "chunked"
    assert (lane[1]["x-served-by"], sanic[1]["x-served-by"]) == ("lane", "sanic")


async def test_an_error_before_the_stream_keeps_its_status_in_the_dialects_shape(port):
    for extra in ((), ("Connection: close",)):
        status, _, body = await answer(port, request("POST", "/t/numbers/-1", b"", *extra))
        assert status == 422 and json.loads(body) == {"oops": "count must not be negative"}


async def test_a_stream_failing_midway_closes_the_connection_and_the_server_goes_on(port):
    for extra in ((), ("Connection: close",)):
        with pytest.raises((asyncio.IncompleteReadError, ConnectionError)):
            await answer(port, request("POST", "/t/numbers/6/fail", b"", *extra))
    assert (await answer(port, request("POST", "/t/numbers/2")))[2] == b"0;1;"


async def test_a_streamed_body_arrives_in_chunks(port):
    body = b"z" * 300_000
    status, _, reply = await answer(port, request("POST", "/t/upload", body))
    assert status == 200 and json.loads(reply) == {"bytes": 300_000}


async def test_a_route_body_limit_is_refused_before_the_body_in_the_dialects_shape(port):
    head = request("POST", "/t/small", b"")[: -len("\r\n\r\n")].replace(
        b"Content-Length: 0", b"Content-Length: 11"
    )
    status, _, body = await answer(port, head + b"\r\n\r\n")  # the 11 bytes never come
    assert status == 413 and "larger than the limit" in json.loads(body)["oops"]
    status, _, body = await answer(port, request("POST", "/t/small", b"0123456789"))
    assert status == 200 and json.loads(body)["size"] == 10


async def test_a_body_in_one_piece_on_the_sanic_path_is_consumed(port, caplog):
    """Found by the soak: Sanic logged "body not consumed" at ERROR after each such 2xx answer."""
    for path in ("/t/small?x=1", "/t/Echo/a"):
        status, _, body = await answer(port, request("POST", path, b"0123456789", "Connection: close"))
        assert status == 200 and json.loads(body)["size"] == 10
    await asyncio.sleep(0.5)  # Sanic checks the body after the answer has left
    assert [r.getMessage() for r in caplog.records if "not consumed" in r.getMessage()] == []


async def test_query_case_percent_and_trailing_slash_on_the_sanic_path(port):
    status, _, body = await answer(port, request("GET", "/T/ECHO/a%20b/?x=1&x=2&y=", b""))
    assert status == 200
    assert json.loads(body) == {"params": {"name": "a b"}, "query": {"x": "1"}, "size": 0}


async def test_misses_under_the_prefix_are_rendered_by_its_owner(port):
    status, _, body = await answer(port, request("PUT", "/t/small"))
    assert status == 405 and json.loads(body) == {"oops": "Method Not Allowed"}
    status, _, body = await answer(port, request("GET", "/t/nowhere"))
    assert status == 404 and json.loads(body) == {"oops": "Not Found"}
    status, _, body = await answer(port, request("GET", "/elsewhere"))
    assert status == 404 and json.loads(body) == {"error": "Not Found"}


async def test_a_route_declared_by_two_dialects_stops_start_up_naming_both(tmp_path):
    with pytest.raises(PluginError, match="routetest.*clash|clash.*routetest"):
        async with InProcessServer(_settings(tmp_path), [RouteTestPlugin, ClashingPlugin]):
            pass  # pragma: no cover - start-up must fail
