"""A key limited to models, on calls that name their model only in the body (access/scope.py).

The gate lets such a call in with a scope; the handler's first DataPlane call
(or its own ``check_model_access``) checks the model; what an allowed model
runs in turn is not checked again. Run against a real in-process server.
"""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np
import pytest

from modelplatform import InferenceRequest, PermissionDenied, Tensor, check_model_access
from modelplatform.base.access.keys import ApiKey, KeyFile
from modelplatform.base.access.restrictions import Restrictions
from modelplatform.base.access.scope import model_scope
from modelplatform.base.settings import Settings
from modelplatform.frontends.gate import AccessGate
from modelplatform.testing import InProcessServer

from ..conftest import MODEL_REPOSITORY


def _key(*models: str) -> ApiKey:
    return ApiKey("batch", hashlib.sha256(b"k").digest(), frozenset({"inference"}), frozenset(models))


def _simple(model: str) -> InferenceRequest:
    ones = np.ones((1, 16), dtype=np.int32)
    return InferenceRequest(model, [Tensor.from_array("INPUT0", ones), Tensor.from_array("INPUT1", ones)])


def _settings() -> Settings:
    return Settings(model_repository=MODEL_REPOSITORY, http_port=0, grpc_port=0,
                    plugin_options={"metrics": {"metrics_port": 0, "allow_metrics": False}}, load_models=("simple_ensemble", "stream_counter"))  # fmt: skip


def test_the_gate_defers_a_call_naming_its_model_late_only_for_keys_limited_to_models(tmp_path) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(
        f'[[keys]]\nname = "batch"\nsha256 = "{hashlib.sha256(b"b").hexdigest()}"\n'
        'categories = ["inference"]\nmodels = ["simple"]\n'
        f'[[keys]]\nname = "all"\nsha256 = "{hashlib.sha256(b"a").hexdigest()}"\ncategories = ["inference"]\n'
    )
    gate = AccessGate(Restrictions.parse([], "--flag"), Restrictions.parse([], "--flag"), KeyFile(keys))
    late = gate.check_http("inference", "", {"authorization": "Bearer b"})
    assert late.denial is None and late.deferred is not None and late.deferred.name == "batch"
    assert gate.check_http("inference", "", {"authorization": "Bearer a"}).deferred is None
    named = gate.check_http("inference", "other", {"authorization": "Bearer b"})
    assert named.denial is not None and named.denial.message == "API key 'batch' may not use model 'other'"
    assert gate.check_http("inference", "simple", {"authorization": "Bearer b"}).deferred is None


def test_the_first_dataplane_call_checks_the_model_and_what_it_runs_is_not_checked_again() -> None:
    async def run() -> dict[str, str]:
        outcomes: dict[str, str] = {}
        async with InProcessServer(_settings()) as server:
            dataplane = server.context.dataplane
            with model_scope(_key("simple_ensemble")):  # its steps call `simple`, not in the key
                response = await dataplane.inference.infer(_simple("simple_ensemble"))
                outcomes["ensemble"] = str(response.outputs[0].data.reshape(-1)[0])
            for what, call in (
                ("infer", lambda: dataplane.inference.infer(_simple("simple_ensemble"))),
                ("stream", lambda: _drain(dataplane.inference.stream(_simple("stream_counter")))),
                ("raw", lambda: dataplane.inference.call_raw("stream_counter", "", b"2", {})),
                ("unknown", lambda: dataplane.inference.infer(_simple("no_such_model"))),
            ):
                with model_scope(_key("simple")), pytest.raises(PermissionDenied) as refused:
                    await call()
                outcomes[what] = str(refused.value)
        return outcomes

    outcomes = asyncio.run(run())
    assert outcomes["ensemble"] == "2"
    assert outcomes["infer"] == "API key 'batch' may not use model 'simple_ensemble'"
    assert outcomes["stream"] == "API key 'batch' may not use model 'stream_counter'"
    assert outcomes["raw"] == "API key 'batch' may not use model 'stream_counter'"
    assert outcomes["unknown"] == "API key 'batch' may not use model 'no_such_model'"  # not "not found"


def test_a_handler_checks_each_model_it_will_run_itself() -> None:
    with model_scope(_key("a", "b")):
        check_model_access("a")
        check_model_access("b")
        with pytest.raises(PermissionDenied, match="may not use model 'c'"):
            check_model_access("c")  # checked even after others were
    check_model_access("c")  # outside a scope: nothing to check


async def _drain(responses) -> None:  # type: ignore[no-untyped-def]  # any async iterator
    async for _ in responses:
        pass
