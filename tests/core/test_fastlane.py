"""The HTTP fast lane: which requests it answers, which it leaves to Sanic, and order.

A test dialect serves the same path twice: its Sanic route answers
``sanic:<body>`` and its fast route ``fast:<body>``, so every response says
who answered it. Clients are raw sockets, to control framing exactly.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sanic import HTTPResponse

from modelplatform import HttpDialect, HttpReply, HttpRequest, HttpRoute, Settings, hookimpl
from modelplatform.frontends.http.fastlane import FAST_BODY_LIMIT, HEAD_LIMIT, head_bytes
from modelplatform.frontends.http.routing import Router
from modelplatform.testing import InProcessServer, free_port


def _who(request: HttpRequest) -> bytes:
    """Which path served the request: the lane hands handlers a plain dict of headers.

    (Only this test looks; the platform's own handlers never know.)
    """
    return b"fast:" if type(request.headers) is dict else b"sanic:"


async def _echo(request: HttpRequest) -> HttpReply:
    name = request.params["name"]
    if name == "slow":
        await asyncio.sleep(0.2)
    if name == "boom":
        raise RuntimeError("the handler broke")
    extra = {"x-version": request.params.get("version", "-")}
    return HttpReply(200, _who(request) + bytes(request.body), "text/plain", extra)


def _routes(context: object) -> list[HttpRoute]:
    return [
        HttpRoute(("POST",), "/lane/{name}/echo", _echo, hot=True),
        HttpRoute(("POST",), "/lane/{name}/versions/{version:int}/echo", _echo, hot=True),
    ]


def _status(error: Exception) -> int:
    return 400


class LaneTestPlugin:
    @staticmethod
    @hookimpl
    def register_http_dialects(settings: Settings) -> list[HttpDialect]:
        return [HttpDialect("lanetest", _routes, _status)]


@pytest.fixture
async def port(tmp_path: Path):
    settings = Settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("oip-rest",))  # fmt: skip
    async with InProcessServer(settings, [LaneTestPlugin]):
        yield settings.http_port


def post(path: str, body: bytes = b"x", *headers: str, version: str = "1.1") -> bytes:
    lines = [f"POST {path} HTTP/{version}", "Host: test", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    while head.startswith(b"HTTP/1.1 100 "):  # Sanic's interim answer to Expect
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    status_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), 5)
    return int(status_line.split()[1]), headers, body


async def exchange(port: int, *chunks: bytes, responses: int = 1, pause: float = 0.0):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            if pause:
                await asyncio.sleep(pause)
        return [await read_response(reader) for _ in range(responses)]
    finally:
        writer.close()


async def test_a_plain_keep_alive_post_takes_the_lane(port):
    [(status, headers, body)] = await exchange(port, post("/lane/a/echo", b"hello"))
    assert (status, body) == (200, b"fast:hello")
    assert headers["content-type"] == "text/plain" and headers["connection"] == "keep-alive"
    assert headers["x-version"] == "-"


async def test_path_parameters_bind_like_sanic(port):
    [(_, headers, body)] = await exchange(port, post("/lane/a/versions/007/echo"))
    assert body == b"fast:x" and headers["x-version"] == "7"
    [(_, _, body)] = await exchange(port, post("/lane/a/versions/v7/echo"))
    assert not body.startswith(b"fast:")  # not an int: Sanic's router decides (404)


@pytest.mark.parametrize(
    "request_bytes",
    [
        post("/lane/a/echo?x=1"),
        post("/lane/%61/echo"),
        post("/lane/a/echo", b"x", "Connection: close"),
        post("/lane/a/echo", version="1.0"),
        post("/lane/a/echo", b"x", "Expect: 100-continue"),
        b"POST /lane/a/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
        post("/lane/a/echo", b"x" * (FAST_BODY_LIMIT + 1)),
    ],
    ids=["query", "percent", "close", "http10", "expect", "chunked", "large"],
)
async def test_everything_unusual_goes_to_sanic(port, request_bytes):
    [(status, _, body)] = await exchange(port, request_bytes)
    assert status == 200 and body.startswith(b"sanic:x")


async def test_other_methods_and_paths_are_sanics(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /lane/a/echo HTTP/1.1\r\nHost: t\r\n\r\n")
    status, _, _ = await read_response(reader)
    assert status == 405
    writer.write(post("/nowhere"))
    status, _, body = await read_response(reader)
    assert status == 404 and b"Not Found" in body
    writer.close()


async def test_pipelined_requests_are_answered_in_order(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post("/lane/slow/echo", b"1") + post("/lane/a/echo?q", b"2") + post("/lane/a/echo", b"3"))
    answers = [(await read_response(reader))[2] for _ in range(3)]
    # What arrived behind a request for Sanic is Sanic's too (the lane cannot
    # know where a request it does not parse ends); order is kept either way.
    assert answers == [b"fast:1", b"sanic:2", b"sanic:3"]
    writer.write(post("/lane/a/echo", b"4"))  # Sanic idle again: the lane takes over
    assert (await read_response(reader))[2] == b"fast:4"
    writer.close()


async def test_a_request_split_across_packets_still_takes_the_lane(port):
    whole = post("/lane/a/echo", b"0123456789")
    chunks = (whole[:3], whole[3:30], whole[30:-4], whole[-4:])
    [(status, _, body)] = await exchange(port, *chunks, pause=0.05)
    assert (status, body) == (200, b"fast:0123456789")


async def test_a_failing_handler_answers_500_and_the_connection_goes_on(port):
    answers = await exchange(port, post("/lane/boom/echo") + post("/lane/a/echo"), responses=2)
    (status, headers, body), (after, _, after_body) = answers
    assert status == 500 and body == b'{"error":"internal error: RuntimeError"}'
    assert headers["content-type"] == "application/json"
    assert (after, after_body) == (200, b"fast:x")


async def test_malformed_heads_get_sanics_400(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /lane/a/echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy")
    status, _, _ = await read_response(reader)
    assert status == 400
    writer.close()
    [(status, _, _)] = await exchange(port, b"POST /lane/a/echo HTTP/1.1\r\nBad Header\r\n\r\n")
    assert status == 400


async def test_an_endless_head_is_sanics_to_refuse(port):
    head = b"POST /lane/a/echo HTTP/1.1\r\nX-Long: " + b"a" * (HEAD_LIMIT + 100)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)  # no blank line ever comes
    status, _, _ = await read_response(reader)
    assert status == 413  # Sanic's header limit, not a lane that buffers forever
    writer.close()


async def test_a_client_gone_mid_request_leaves_the_server_serving(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(post("/lane/slow/echo"))
    await writer.drain()
    writer.close()  # gone before the 0.2 s answer
    await asyncio.sleep(0.3)
    [(status, _, body)] = await exchange(port, post("/lane/a/echo"))
    assert (status, body) == (200, b"fast:x")


async def test_the_lane_can_be_switched_off(tmp_path):
    settings = Settings(model_repository=tmp_path, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("oip-rest",), http_fast_lane=False)  # fmt: skip
    async with InProcessServer(settings, [LaneTestPlugin]):
        [(status, _, body)] = await exchange(settings.http_port, post("/lane/a/echo"))
    assert (status, body) == (200, b"sanic:x")


def _router(*routes: HttpRoute) -> Router:
    dialect = HttpDialect("t", lambda context: routes, _status)
    return Router([dialect], {"t": routes})


def test_router_matches_by_segments():
    async def handler(request):  # pragma: no cover - never called
        raise AssertionError

    router = _router(HttpRoute(("POST",), "/v2/models/{model}/versions/{version:int}/infer", handler))

    def match(method: str, path: str):
        found = router.match(method, path)
        return None if found is None else (found.route.handler, found.params)

    assert match("POST", "/v2/models/m/versions/3/infer") == (handler, {"model": "m", "version": "3"})
    assert match("POST", "/v2/models//versions/3/infer") is None
    assert match("POST", "/v2/models/m/versions/-3/infer") is None
    assert match("PUT", "/v2/models/m/versions/3/infer") is None
    assert match("POST", "/v2/models/m/infer") is None


async def test_a_body_less_close_request_is_sanics(port):
    """httptools reports keep-alive for a complete body-less request; the lane must not."""
    [(status, headers, body)] = await exchange(port, post("/lane/a/echo", b"", "Connection: close"))
    assert (status, body, headers["connection"]) == (200, b"sanic:", "close")
    [(status, _, body)] = await exchange(port, post("/lane/a/echo", b"", version="1.0"))
    assert (status, body) == (200, b"sanic:")


def test_reply_head_strips_what_sanic_strips():
    headers = {"Inference-Header-Content-Length": "17", "X-Odd": "a\r\nb\x00c", "X-Utf": "é"}
    ours = head_bytes(HttpReply(200, b"{}", "application/json", headers), b"")
    lines = dict(line.split(b": ", 1) for line in ours.split(b"\r\n")[1:] if b": " in line)
    sanic = dict(
        HTTPResponse(b"{}", headers=dict(headers), content_type="application/json").processed_headers
    )
    for name, value in sanic.items():
        assert lines[name] == value, name
    assert lines[b"X-Odd"] == b"abc" and lines[b"content-type"] == b"application/json"


async def test_an_endless_version_number_is_bound_on_both_paths(port):
    digits = "0" + "9" * 5000
    [(status, headers, body)] = await exchange(port, post(f"/lane/a/versions/{digits}/echo"))
    assert (status, body, headers["x-version"]) == (200, b"fast:x", "9" * 5000)
    [(status, headers, body)] = await exchange(
        port, post(f"/lane/a/versions/{digits}/echo", b"x", "Connection: close")
    )
    assert (status, body) == (200, b"sanic:x")
