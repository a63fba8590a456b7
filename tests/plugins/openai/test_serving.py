"""What the server gives every dialect, through this one: API keys (the SDK's Bearer header),
restricted APIs, body bounds, response deadlines, a client leaving mid-stream, and the /v1
prefix (refused beside TF Serving REST, naming the clash), and drain."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import httpx
import openai
import orjson
import pytest

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY

MODELS = Path(__file__).with_name("models")
EVERYTHING, EMBED_ONLY = "key-all-3c9e", "key-embed-71d2"
HELLO = [{"role": "user", "content": "hello"}]


def _keys(path: Path) -> Path:
    def entry(name, key, models):
        lines = ["[[keys]]", f'name = "{name}"', f'sha256 = "{hashlib.sha256(key.encode()).hexdigest()}"',
                 'categories = ["inference", "metadata"]']  # fmt: skip
        return "\n".join(lines + ([f"models = {models!r}".replace("'", '"')] if models else []))

    path.write_text(entry("all", EVERYTHING, None) + "\n" + entry("embed", EMBED_ONLY, ["tiny_embed"]) + "\n")
    return path


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("openai-repo")
    for model in (MODEL_REPOSITORY / "tiny_lm", MODEL_REPOSITORY / "tiny_embed", *MODELS.iterdir()):
        shutil.copytree(model, root / model.name)
    return root


@pytest.fixture(scope="module")
def progress(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("progress") / "steps"


@pytest.fixture(scope="module")
def keyed(repository, progress, tmp_path_factory):
    """/v1 (TF Serving REST disabled), API keys, a 64 KiB body bound, a 2 s response timeout."""
    keys = _keys(tmp_path_factory.mktemp("keys") / "keys.toml")
    args = ("--model-repository", str(repository), "--openai-prefix", "/v1", "--disable-plugin", "tfserving-rest",
            "--api-keys-file", str(keys), "--max-request-bytes", "65536", "--http-response-timeout-secs", "2")  # fmt: skip
    with ServerProcess(*args, env={"OPENAI_TEST_PROGRESS": str(progress)}) as process:
        yield process


def _sdk(server: ServerProcess, key: str, prefix: str = "/v1", **more) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}{prefix}", api_key=key, max_retries=0, **more)


def test_the_sdk_bearer_key_is_checked_and_scoped_to_models(keyed):
    assert _sdk(keyed, EVERYTHING).chat.completions.create(model="tiny_lm", messages=HELLO, max_tokens=2)
    with pytest.raises(openai.AuthenticationError) as unknown:
        _sdk(keyed, "not-a-key").models.list()
    assert unknown.value.code == "invalid_api_key" and unknown.value.body["type"] == "invalid_request_error"
    embed_only = _sdk(keyed, EMBED_ONLY)
    assert len(embed_only.embeddings.create(model="tiny_embed", input="x").data) == 1
    with pytest.raises(openai.PermissionDeniedError) as scoped:
        embed_only.chat.completions.create(model="tiny_lm", messages=HELLO)
    assert "may not use model 'tiny_lm'" in scoped.value.message
    with pytest.raises(openai.PermissionDeniedError):
        embed_only.models.retrieve("tiny_lm")


def test_a_body_over_the_bound_is_413_in_openai_shape(keyed):
    body = {"model": "tiny_embed", "input": "word " * 20000}
    reply = httpx.post(f"http://{keyed.http_url}/v1/embeddings", json=body,
                       headers={"authorization": f"Bearer {EVERYTHING}"}, timeout=30)  # fmt: skip
    assert reply.status_code == 413 and reply.json()["error"]["type"] == "invalid_request_error"


def _steps(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _assert_stopped(progress: Path) -> None:
    """The model wrote "stopped" (its sender refused a send) and nothing after it."""
    deadline = time.monotonic() + 30
    while "stopped" not in _steps(progress):
        assert time.monotonic() < deadline, f"the model kept running: {len(_steps(progress))} steps"
        time.sleep(0.05)
    stopped = _steps(progress)
    time.sleep(0.5)
    assert _steps(progress) == stopped and stopped[-1] == "stopped"


def test_a_request_past_the_response_timeout_is_504_and_stops_the_model(keyed, progress):
    progress.unlink(missing_ok=True)
    started = time.monotonic()
    with pytest.raises(openai.InternalServerError) as timed_out:
        _sdk(keyed, EVERYTHING).chat.completions.create(model="endless_lm", messages=HELLO)
    assert timed_out.value.status_code == 504 and time.monotonic() - started < 30
    _assert_stopped(progress)


def test_a_client_leaving_mid_stream_stops_the_model(keyed, progress):
    progress.unlink(missing_ok=True)
    stream = _sdk(keyed, EVERYTHING).chat.completions.create(model="endless_lm", messages=HELLO, stream=True)
    seen = [chunk for _, chunk in zip(range(5), stream)]
    stream.close()
    assert seen[-1].choices[0].delta.content == "tick "
    _assert_stopped(progress)


def test_restricted_inference_needs_its_header(repository):
    args = ("--model-repository", str(repository), "--http-restricted-api", "inference:x-team=ml")
    with ServerProcess(*args, env={"OPENAI_TEST_PROGRESS": "/dev/null"}) as server:
        with pytest.raises(openai.PermissionDeniedError) as refused:
            _sdk(server, "k", "/openai/v1").embeddings.create(model="tiny_embed", input="x")
        assert "expecting header 'x-team'" in refused.value.message
        allowed = _sdk(server, "k", "/openai/v1", default_headers={"x-team": "ml"})
        assert allowed.embeddings.create(model="tiny_embed", input="x").data
        listed = [m.id for m in _sdk(server, "k", "/openai/v1").models.list()]
        assert listed == ["endless_lm", "failing_lm", "tiny_embed", "tiny_lm"]


def test_the_v1_prefix_beside_tf_serving_rest_is_refused_naming_the_clash(repository):
    with pytest.raises(RuntimeError) as failed:
        with ServerProcess("--model-repository", str(repository), "--openai-prefix", "/v1"):
            pass
    log = str(failed.value)
    assert "prefix '/v1' clashes with TF Serving REST's /v1 routes" in log
    assert "--disable-plugin tfserving-rest" in log


def test_drain_ends_a_call_that_never_finishes_with_503_in_openai_shape(repository, progress):
    """SIGTERM with a 1 s drain delay and a 2 s exit timeout: the endless call is answered, the model stopped."""
    progress.unlink(missing_ok=True)
    args = ("--model-repository", str(repository), "--drain-delay-secs", "1", "--exit-timeout-secs", "2")
    with ServerProcess(*args, env={"OPENAI_TEST_PROGRESS": str(progress)}) as server:
        answered: list[httpx.Response] = []
        url = f"http://{server.http_url}/openai/v1/chat/completions"
        body = {"model": "endless_lm", "messages": HELLO}
        caller = threading.Thread(target=lambda: answered.append(httpx.post(url, json=body, timeout=60)))
        caller.start()
        deadline = time.monotonic() + 30
        while not _steps(progress):
            assert time.monotonic() < deadline, "the model never started"
            time.sleep(0.05)
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGTERM)
        caller.join(timeout=30)
        assert server.process.wait(timeout=30) == 0
    assert answered[0].status_code == 503, answered[0].text
    error = answered[0].json()["error"]
    assert "shutting down" in error["message"] and error["type"] == "server_error"
    assert "stopped" in _steps(progress)


def test_a_model_failing_mid_stream_ends_the_stream_with_an_error_event(keyed):
    reply = httpx.post(f"http://{keyed.http_url}/v1/completions", timeout=30,
                       headers={"authorization": f"Bearer {EVERYTHING}"},
                       json={"model": "failing_lm", "prompt": "x", "stream": True})  # fmt: skip
    assert reply.status_code == 200
    events = [event.removeprefix("data: ") for event in reply.text.split("\n\n") if event]
    assert [orjson.loads(e)["choices"][0]["text"] for e in events[:2]] == ["one ", "two "]
    error = orjson.loads(events[2])["error"]
    assert "ran out of words" in error["message"] and error["type"] == "server_error"
    assert len(events) == 3  # no [DONE] after an error
    with pytest.raises(openai.APIError, match="ran out of words"):
        list(_sdk(keyed, EVERYTHING).completions.create(model="failing_lm", prompt="x", stream=True))
