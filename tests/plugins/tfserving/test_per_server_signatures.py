"""Parsed signatures and labels belong to one server (issue 27 point 4): two servers in one
process serve a model of the same name with different ``tfserving.labels``; each resolves
its own, and each keeps what it parsed in its own cache."""

from __future__ import annotations

from pathlib import Path

from modelplatform import Settings
from modelplatform.testing import FunctionBackendPlugin, InProcessServer, free_port, function_model
from modelplatform_tfserving.servables import Selector
from modelplatform_tfserving.service import TfService
from modelplatform_tfserving.signatures import signature_cache

CONFIG = """
name: "labelled"
backend: "function"
version_policy: { all: {} }
input [ { name: "A" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "B" data_type: TYPE_FP32 dims: [ 2 ] } ]
parameters { key: "tfserving.labels" value { string_value: '{"stable": %d}' } }
"""


def _server(root: Path, stable: int) -> InProcessServer:
    for version in (1, 2):
        (root / "labelled" / str(version)).mkdir(parents=True)
    (root / "labelled" / "config.pbtxt").write_text(CONFIG % stable)
    settings = Settings(model_repository=root, host="127.0.0.1", http_port=free_port(),
                        grpc_port=free_port(), plugins=("tfserving-rest",))  # fmt: skip
    return InProcessServer(settings, [FunctionBackendPlugin])


async def test_two_servers_resolve_their_own_labels_from_their_own_cache(tmp_path):
    function_model("labelled", lambda inputs: {"B": inputs["A"]})
    first, second = _server(tmp_path / "first", stable=1), _server(tmp_path / "second", stable=2)
    async with first, second:
        on_first = TfService(first.context).resolve(Selector("labelled", label="stable"), "")
        assert on_first.model.version == "1"
        assert on_first.model in signature_cache(first.context)
        assert on_first.model not in signature_cache(second.context)  # parsed on the first only

        on_second = TfService(second.context).resolve(Selector("labelled", label="stable"), "")
        assert on_second.model.version == "2"
        assert signature_cache(first.context) is not signature_cache(second.context)
