"""A traced OpenAI request: the SDK's call with a W3C traceparent yields a span labelled openai."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import openai
import pytest

from modelplatform.testing import ServerProcess

from ...conftest import MODEL_REPOSITORY
from ..tracing.conftest import Receiver

TRACE = "5cf92f3577b34da6a3ce929d0e0e4737"
PARENT = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    collector = Receiver()
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    yield collector
    collector.shutdown()


def test_an_sdk_call_with_traceparent_is_a_span_of_protocol_openai(receiver):
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    args = ("--model-repository", str(MODEL_REPOSITORY), "--load-model", "tiny_embed",
            "--model-control-mode", "explicit", "--trace-otlp-endpoint", endpoint, "--trace-rate", "1")  # fmt: skip
    with ServerProcess(*args, env={"OTEL_BSP_SCHEDULE_DELAY": "100"}) as server:
        sdk = openai.OpenAI(base_url=f"http://{server.http_url}/openai/v1", api_key="x", max_retries=0,
                            default_headers={"traceparent": f"00-{TRACE}-{PARENT}-01"})  # fmt: skip
        assert sdk.embeddings.create(model="tiny_embed", input="traced text").data
        spans = receiver.find(TRACE)
    assert len(spans) == 1 and spans[0].parent_span_id.hex() == PARENT
    found = {item.key: item.value.string_value for item in spans[0].attributes}
    assert found["modelplatform.protocol"] == "openai" and found["modelplatform.model"] == "tiny_embed"
