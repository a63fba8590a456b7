"""The ceiling: canned-response servers measured with the same load generator.

``python benchmarks/canned.py KIND PORT METADATA_DIR`` with KIND ``http``, ``grpc``
(grpc.aio), ``grpc-floor`` (grpc.aio moving bytes only), ``grpc-sync`` (grpcio's
thread-pool server), ``grpc-model`` (grpc.aio running the peer models' own code
and nothing else: model_only.py; not canned, a yardstick for the peer rows) or
``grpc-required`` (the same plus the work a server must keep: required_only.py).
Both answer the calls perf_analyzer makes before measuring (server metadata,
model metadata, model config) with bytes captured from the real server, and
answer every inference by echoing the request's tensor data back under the
model's output names (the bundled benchmark models have outputs shaped like
their inputs), so the ceiling moves the same bytes as the server it bounds.
Answers are cached per request shape: after the first request nothing is
parsed, only the HTTP framing. ``grpc-floor`` does the same for gRPC: its
ModelInfer takes the request's bytes unparsed and answers a reply serialised
once per request size, so it measures what grpc.aio itself costs to carry a
call (no protobuf work, no copy in Python): no server on grpcio can be faster.

``canned.py KIND PORT METADATA_DIR LOOPS`` (a grpc.aio KIND) serves the port
from LOOPS event loops, each with its own grpc.aio server in its own thread,
all bound with SO_REUSEPORT, so that several such processes can share the port
too (benchmarks/grpc_loops.py: what a second loop or process buys).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

import grpc
import httptools
import orjson

from modelplatform_oip.protos import grpc_service_pb2 as pb

# ---------------------------------------------------------------- HTTP


class CannedHttp(asyncio.Protocol):
    def __init__(self, captured: dict[str, bytes], outputs: dict[str, list[str]]) -> None:
        self.captured, self.outputs = captured, outputs
        self.cache: dict[tuple[str, int, str], bytes] = {}
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.headers: dict[bytes, bytes] = {}
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # asyncio types it BaseTransport; a TCP server's is a Transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_message_begin(self) -> None:
        self.url, self.headers, self.body = b"", {}, []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        path = self.url.decode()
        if path.endswith("/infer"):
            payload, headers = self._infer(path, b"".join(self.body))
        else:
            payload, headers = self.captured.get(path, b""), b"Content-Type: application/json\r\n"
        status = b"200 OK" if payload or path.startswith("/v2/health") else b"404 Not Found"
        self.transport.write(  # type: ignore[attr-defined]  # a TCP server's transport (connection_made) writes
            b"HTTP/1.1 "
            + status
            + b"\r\n"
            + headers
            + b"Content-Length: "
            + str(len(payload)).encode()
            + b"\r\n\r\n"
            + payload
        )

    def _infer(self, path: str, body: bytes) -> tuple[bytes, bytes]:
        header_length = int(self.headers.get(b"inference-header-content-length", len(body)))
        key = (path, len(body), str(header_length))
        if key not in self.cache:
            self.cache[key] = self._response_header(path, body[:header_length])
        header = self.cache[key]
        binary = body[header_length:]
        if not binary:
            return header, b"Content-Type: application/json\r\n"
        extra = b"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: "
        return header + binary, extra + str(len(header)).encode() + b"\r\n"

    def _response_header(self, path: str, header: bytes) -> bytes:
        model = path.split("/")[3]
        request = orjson.loads(header)
        outputs = []
        for name, tensor in zip(self.outputs[model], request["inputs"]):
            output = {"name": name, "datatype": tensor["datatype"], "shape": tensor["shape"]}
            if "data" in tensor:
                output["data"] = tensor["data"]
            else:
                output["parameters"] = {"binary_data_size": tensor["parameters"]["binary_data_size"]}
            outputs.append(output)
        return orjson.dumps({"model_name": model, "model_version": "1", "outputs": outputs})


# ---------------------------------------------------------------- gRPC

SERVICE = "inference.GRPCInferenceService"


def grpc_handlers(
    captured: dict[str, bytes], outputs: dict[str, list[str]], asynchronous: bool = True
) -> grpc.GenericRpcHandler:
    def fixed(key: str, response_type):
        message = response_type.FromString(captured[key]) if key in captured else response_type()

        async def handler(request, context):
            return message

        return handler

    async def metadata(request, context):
        return pb.ModelMetadataResponse.FromString(captured[f"grpc-meta/{request.name}"])

    async def config(request, context):
        return pb.ModelConfigResponse.FromString(captured[f"grpc-config/{request.name}"])

    def answer(request: pb.ModelInferRequest) -> pb.ModelInferResponse:
        response = pb.ModelInferResponse(model_name=request.model_name, model_version="1")
        for name, tensor in zip(outputs[request.model_name], request.inputs):
            response.outputs.add(name=name, datatype=tensor.datatype, shape=tensor.shape)
        response.raw_output_contents.extend(request.raw_input_contents)
        return response

    async def infer(request: pb.ModelInferRequest, context):
        return answer(request)

    def unary(fn, request_type, response_type):
        if not asynchronous:  # the sync server calls plain functions on its thread pool
            fn = _synchronous(fn)
        return grpc.unary_unary_rpc_method_handler(
            fn,
            request_deserializer=request_type.FromString,
            response_serializer=response_type.SerializeToString,
        )

    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "ServerLive": unary(
                fixed("live", pb.ServerLiveResponse), pb.ServerLiveRequest, pb.ServerLiveResponse
            ),
            "ServerReady": unary(
                fixed("ready", pb.ServerReadyResponse), pb.ServerReadyRequest, pb.ServerReadyResponse
            ),
            "ServerMetadata": unary(
                fixed("grpc-server", pb.ServerMetadataResponse),
                pb.ServerMetadataRequest,
                pb.ServerMetadataResponse,
            ),
            "ModelMetadata": unary(metadata, pb.ModelMetadataRequest, pb.ModelMetadataResponse),
            "ModelConfig": unary(config, pb.ModelConfigRequest, pb.ModelConfigResponse),
            "ModelInfer": unary(infer, pb.ModelInferRequest, pb.ModelInferResponse),
        },
    )


def floor_handlers(captured: dict[str, bytes], outputs: dict[str, list[str]]) -> grpc.GenericRpcHandler:
    """grpc_handlers with a ModelInfer that moves bytes only (the module's docstring)."""
    replies: dict[int, bytes] = {}
    infer = grpc_handlers(captured, outputs)._method_handlers[f"/{SERVICE}/ModelInfer"].unary_unary

    async def canned_reply(request: bytes, context) -> bytes:
        reply = replies.get(len(request))
        if reply is None:
            reply = replies[len(request)] = (
                await infer(pb.ModelInferRequest.FromString(request), context)
            ).SerializeToString()
        return reply

    return _with_model_infer(captured, outputs, grpc.unary_unary_rpc_method_handler(canned_reply))


def model_only_handlers(captured: dict[str, bytes], outputs: dict[str, list[str]]) -> grpc.GenericRpcHandler:
    """grpc_handlers with a ModelInfer that runs the peer model (model_only.py)."""
    import model_only  # a sibling module: benchmarks/ is this script's folder

    return _with_model_infer(captured, outputs, model_only.infer_handler(model_only.load_models()))


def required_handlers(captured: dict[str, bytes], outputs: dict[str, list[str]]) -> grpc.GenericRpcHandler:
    """grpc_handlers with a ModelInfer that runs the peer model and the required work
    (required_only.py)."""
    import required_only  # a sibling module, as above

    return _with_model_infer(captured, outputs, required_only.required_handler())


def _with_model_infer(
    captured: dict[str, bytes], outputs: dict[str, list[str]], infer: grpc.RpcMethodHandler
) -> grpc.GenericRpcHandler:
    """grpc_handlers with ``infer`` answering ModelInfer."""
    table = dict(grpc_handlers(captured, outputs)._method_handlers)
    table[f"/{SERVICE}/ModelInfer"] = infer
    return grpc.method_handlers_generic_handler(
        SERVICE, {key.rpartition("/")[2]: h for key, h in table.items()}
    )


def _synchronous(handler):
    """A coroutine handler as a plain function (its body never awaits)."""

    def call(request, context):
        coroutine = handler(request, context)
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        raise RuntimeError("canned handlers must not await")

    return call


def serve_grpc_sync(port: int, folder: Path) -> None:
    """grpcio's thread-pool server: the other ceiling for gRPC (whichever is faster counts)."""
    from concurrent.futures import ThreadPoolExecutor

    captured, outputs = load_captured(folder)
    server = grpc.server(ThreadPoolExecutor(max_workers=16), options=_GRPC_OPTIONS)
    server.add_generic_rpc_handlers((grpc_handlers(captured, outputs, asynchronous=False),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("canned_started", flush=True)
    server.wait_for_termination()


# ---------------------------------------------------------------- main

_GRPC_OPTIONS = [("grpc.max_receive_message_length", 2**31 - 1), ("grpc.max_send_message_length", 2**31 - 1)]


def load_captured(folder: Path) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    captured = {k: bytes.fromhex(v) for k, v in json.loads((folder / "captured.json").read_text()).items()}
    outputs = json.loads((folder / "outputs.json").read_text())
    return captured, outputs


async def serve(kind: str, port: int, folder: Path, shared: threading.Barrier | None = None) -> None:
    """One server on this loop; with ``shared`` it binds with SO_REUSEPORT and, once
    listening, waits at the barrier instead of announcing itself (serve_loops does)."""
    captured, outputs = load_captured(folder)
    if kind == "http":
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: CannedHttp(captured, outputs), "127.0.0.1", port)
        print("canned_started", flush=True)
        await server.serve_forever()
    else:
        reuse = [("grpc.so_reuseport", 1)] if shared is not None else []
        grpc_server = grpc.aio.server(options=_GRPC_OPTIONS + reuse)
        handlers = {
            "grpc-floor": floor_handlers,
            "grpc-model": model_only_handlers,
            "grpc-required": required_handlers,
        }.get(kind, grpc_handlers)
        grpc_server.add_generic_rpc_handlers((handlers(captured, outputs),))
        grpc_server.add_insecure_port(f"127.0.0.1:{port}")
        await grpc_server.start()
        if shared is None:
            print("canned_started", flush=True)
        else:
            await asyncio.to_thread(shared.wait)
        await grpc_server.wait_for_termination()


def serve_loops(kind: str, port: int, folder: Path, loops: int) -> None:
    """``loops`` grpc.aio servers on one port, one event loop (and thread) each."""
    import uvloop

    shared = threading.Barrier(loops + 1)
    for _ in range(loops):
        threading.Thread(target=uvloop.run, args=(serve(kind, port, folder, shared),), daemon=True).start()
    shared.wait()
    print("canned_started", flush=True)
    threading.Event().wait()  # the daemon threads serve until the process is stopped


if __name__ == "__main__":
    if sys.argv[1] == "grpc-sync":
        serve_grpc_sync(int(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) > 4:
        serve_loops(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        import uvloop

        uvloop.run(serve(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])))
