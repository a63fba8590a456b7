"""`make bench` openai rows: what the OpenAI-compatible dialect costs over the model it serves.

Streaming (``tiny_lm``, greedy, 64 tokens a request, no delay between tokens):
time to first token (TTFT, median) and streamed tokens per second, at
concurrency 1 and 16, over ``POST /openai/v1/chat/completions`` with
``stream: true`` (httpx, each SSE event parsed) against the same model called
in process (``dataplane.inference.stream``, no transport), and against
Triton's ``/v2/models/tiny_lm/generate_stream`` (the same model over HTTP
and SSE without this dialect: what the transport alone costs). Embeddings
(``tiny_embed``, one 8-word text a request, concurrency 8): requests per
second over ``POST /openai/v1/embeddings`` against OIP's
``POST /v2/models/tiny_embed/infer`` with the same text, the same client and
the same server. Each figure is the median of ROUNDS rounds; the HTTP
streams and the two embedding routes run back to back in each round (a load
change on a shared machine hits both). "ratio" is a figure over its
in-process (streams) or OIP (embeddings) reference, "of gen." the chat's
median per-round ratio to generate_stream (tokens/s and req/s: higher is
better; TTFT: lower is better). The "no socket" rows run both streaming
routes through the server's request path in this process (ComposedServer:
match, admission, handler, the SSE body read to its end) with no HTTP
connection: the dialect's own cost beside generate_stream's, without the
transport's and the client's.

    python benchmarks/openai_rows.py        # or: make bench BENCH_ARGS="--only openai"
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson

from modelplatform import InferenceRequest, Settings, Tensor
from modelplatform.testing import ComposedServer, InProcessServer, ServerProcess, resolved_settings

ROOT = Path(__file__).resolve().parent.parent
LABEL = "openai"
TOKENS = 64
#: Requests per client at each concurrency (c1: REQUESTS; c16: REQUESTS // 4 each).
REQUESTS = 40
EMBED_SECONDS = 2.0
ROUNDS = 3
TEXT = "the quick brown fox jumps over the lazy dog"
CHAT = {"model": "tiny_lm", "messages": [{"role": "user", "content": "tell me"}], "max_tokens": TOKENS,
        "temperature": 0, "stream": True}  # fmt: skip


def repository() -> Path:
    root = Path(tempfile.mkdtemp(prefix="bench-openai-"))
    for name in ("tiny_lm", "tiny_embed"):
        shutil.copytree(ROOT / "model_repository" / name, root / name)
    return root


@dataclasses.dataclass
class Streamed:
    """What a run of streamed requests measured."""

    first_token_s: list[float] = dataclasses.field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0

    @property
    def ttft_ms(self) -> float:
        return statistics.median(self.first_token_s) * 1000

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


async def _run_clients(concurrency: int, one: Callable[[Streamed], Awaitable[None]]) -> Streamed:
    result = Streamed()
    each = REQUESTS if concurrency == 1 else max(1, REQUESTS // 4)

    async def client() -> None:
        for _ in range(each):
            await one(result)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    result.seconds = time.perf_counter() - started
    return result


async def in_process(root: Path, concurrency: int) -> Streamed:
    settings = Settings(model_repository=root, http_port=0, grpc_port=0)
    settings = dataclasses.replace(
        settings, plugin_options={"metrics": {"metrics_port": 0, "allow_metrics": False}}
    )
    async with InProcessServer(settings) as server:
        dataplane = server.context.dataplane

        async def one(result: Streamed) -> None:
            prompt = np.array([b"<|user|> tell me\n<|assistant|>"], dtype=object)
            request = InferenceRequest("tiny_lm", [Tensor("text_input", "BYTES", (1,), prompt)],
                                       parameters={"max_tokens": TOKENS, "temperature": 0.0})  # fmt: skip
            started, first = time.perf_counter(), True
            async for response in dataplane.inference.stream(request):
                if response.output("text_output") is not None:
                    first = _token(result, started, first)

        await one(Streamed())  # warm
        return await _run_clients(concurrency, one)


def _token(result: Streamed, started: float, first: bool) -> bool:
    """Counts one token; the first of a request also records its TTFT. Answers ``first`` for the next."""
    result.tokens += 1
    if first:
        result.first_token_s.append(time.perf_counter() - started)
    return False


GENERATE = {"text_input": "<|user|> tell me\n<|assistant|>", "max_tokens": TOKENS, "temperature": 0.0}


def _chat_token(event: dict[str, Any]) -> bool:
    return bool(event["choices"][0]["delta"].get("content"))


def _generate_token(event: dict[str, Any]) -> bool:
    return "text_output" in event


async def over_http(server: ServerProcess, concurrency: int, generate: bool = False) -> Streamed:
    """Over /chat/completions, or (``generate``) Triton's /generate_stream: SSE both, no dialect."""
    path = "/v2/models/tiny_lm/generate_stream" if generate else "/openai/v1/chat/completions"
    body, is_token = (GENERATE, _generate_token) if generate else (CHAT, _chat_token)
    url = f"http://{server.http_url}{path}"
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=concurrency)) as http:

        async def one(result: Streamed) -> None:
            started, first = time.perf_counter(), True
            async with http.stream("POST", url, json=body) as reply:
                async for line in reply.aiter_lines():
                    if line.startswith("data: {") and is_token(orjson.loads(line[6:])):
                        first = _token(result, started, first)

        await one(Streamed())  # warm
        return await _run_clients(concurrency, one)


EMBED_BODY = orjson.dumps({"model": "tiny_embed", "input": TEXT, "encoding_format": "float"})
OIP_BODY = orjson.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [TEXT]}]})


async def requests_per_s(server: ServerProcess, path: str, body: bytes, concurrency: int = 8) -> float:
    """Requests answered 200 per second by ``concurrency`` clients for EMBED_SECONDS."""
    url = f"http://{server.http_url}{path}"
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=concurrency)) as http:
        (await http.post(url, content=body, headers=headers)).raise_for_status()
        done, stop = 0, time.perf_counter() + EMBED_SECONDS

        async def client() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                reply = await http.post(url, content=body, headers=headers)
                reply.raise_for_status()
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return done / (time.perf_counter() - started)


HANDLER_CALLS = 30


def handler_rows(root: Path) -> list[dict[str, Any]]:
    """Both streaming routes through the server's whole request path (match, admission,
    handler, the SSE body read to its end) with no socket: the dialect's own cost per
    request, without the transport's and the client's."""
    settings = resolved_settings(
        model_repository=root, load_models=("tiny_lm",), model_control_mode="explicit"
    )
    server = ComposedServer(settings)
    chat = orjson.dumps({**CHAT, "stream": True})
    generate = orjson.dumps(GENERATE)

    async def per_request(path: str, body: bytes) -> float:
        started = time.perf_counter()
        for _ in range(HANDLER_CALLS):
            reply = await server.http("POST", path, body, {"content-type": "application/json"})
            assert reply.status == 200, reply.body
        return (time.perf_counter() - started) / HANDLER_CALLS * 1000

    async def measure() -> list[tuple[float, float]]:
        await server.start()
        try:
            await per_request("/openai/v1/chat/completions", chat)  # warm
            return [
                (await per_request("/v2/models/tiny_lm/generate_stream", generate),
                 await per_request("/openai/v1/chat/completions", chat))
                for _ in range(ROUNDS)
            ]  # fmt: skip
        finally:
            await server.close()

    pairs = asyncio.run(measure())
    generate_ms = statistics.median(g for g, _ in pairs)
    chat_ms = statistics.median(c for _, c in pairs)
    ratio = statistics.median(c / g for g, c in pairs)
    name = f"tiny_lm {TOKENS} tokens, no socket"
    return [_row(f"{name} generate_stream ms/request", generate_ms, 1.0),
            _row(f"{name} /chat/completions ms/request", chat_ms, ratio)]  # fmt: skip


def rows() -> list[dict[str, Any]]:
    root = repository()
    try:
        found = handler_rows(root)
        with ServerProcess("--model-repository", str(root)) as server:
            for concurrency in (1, 16):
                local = [asyncio.run(in_process(root, concurrency)) for _ in range(ROUNDS)]
                rounds = [_stream_round(server, concurrency) for _ in range(ROUNDS)]
                found += _stream_rows(concurrency, local, rounds)
            found += _embedding_rows(server)
        return found
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stream_round(server: ServerProcess, concurrency: int) -> tuple[Streamed, Streamed]:
    """generate_stream then /chat/completions, back to back: a load change hits both."""
    generate = asyncio.run(over_http(server, concurrency, generate=True))
    return generate, asyncio.run(over_http(server, concurrency))


def _stream_rows(
    concurrency: int, local: list[Streamed], rounds: list[tuple[Streamed, Streamed]]
) -> list[dict[str, Any]]:
    """Medians over the rounds; "ratio" to in-process, "of generate" the chat's median per-round
    ratio to generate_stream (the same model over HTTP and SSE without this dialect)."""
    name = f"tiny_lm {TOKENS} tokens c{concurrency}"
    found = []
    readers: tuple[tuple[str, Callable[[Streamed], float]], ...] = (
        ("TTFT ms", lambda run: run.ttft_ms),
        ("tokens/s", lambda run: run.tokens_per_s),
    )
    for what, read in readers:
        base = statistics.median(read(run) for run in local)
        generate = statistics.median(read(g) for g, _ in rounds)
        chat = statistics.median(read(c) for _, c in rounds)
        of_generate = statistics.median(read(c) / read(g) for g, c in rounds)
        found += [
            _row(f"{name} in-process {what}", base, 1.0),
            _row(f"{name} generate_stream {what}", generate, generate / base),
            _row(f"{name} /chat/completions {what}", chat, chat / base, of_generate),
        ]
    return found


def _embedding_rows(server: ServerProcess) -> list[dict[str, Any]]:
    pairs = []
    for _ in range(ROUNDS):  # alternating: a load change on the shared machine hits both
        oip = asyncio.run(requests_per_s(server, "/v2/models/tiny_embed/infer", OIP_BODY))
        dialect = asyncio.run(requests_per_s(server, "/openai/v1/embeddings", EMBED_BODY))
        pairs.append((oip, dialect))
    oip = statistics.median(p[0] for p in pairs)
    dialect = statistics.median(p[1] for p in pairs)
    ratio = statistics.median(p[1] / p[0] for p in pairs)
    return [
        _row("tiny_embed c8 OIP infer req/s", oip, 1.0),
        _row("tiny_embed c8 /embeddings req/s", dialect, ratio),
    ]


def _row(label: str, value: float, ratio: float, of_generate: float | None = None) -> dict[str, Any]:
    row = {"scenario": f"openai: {label}", "value": round(value, 1), "ratio": round(ratio, 3)}
    if of_generate is not None:
        row["of_generate_stream"] = round(of_generate, 3)
    return row


def print_rows(found: list[dict[str, Any]]) -> None:
    print(
        f"\n{'openai dialect (medians of ' + str(ROUNDS) + ' rounds)':58s} {'value':>10s} {'ratio':>7s} {'of gen.':>8s}"
    )
    for row in found:
        extra = f"{row['of_generate_stream']:8.3f}" if "of_generate_stream" in row else ""
        print(f"{row['scenario']:58s} {row['value']:10.1f} {row['ratio']:7.3f} {extra}")


if __name__ == "__main__":
    print_rows(rows())
