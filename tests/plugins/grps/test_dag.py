"""grps's sequential DAG (issue 18 point 5): predict without a model runs the DAG.

The DAG is `simple` twice (the second node fed by the first's outputs in
declared order), run by the ensemble engine: OUTPUT0 = 2 * INPUT0,
OUTPUT1 = 2 * INPUT1, each node counted in `simple`'s own statistics.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from modelplatform import InvalidArgument
from modelplatform.testing import ServerProcess
from modelplatform_grps.options import GrpsOptions
from modelplatform_grps.protos import grps_pb2, grps_pb2_grpc
from modelplatform_grps.protos.grps_pb2 import GenericTensor, GrpsMessage, Status

from .conftest import call_json, make_repository

PREDICT = "/grps/v1/infer/predict"
DAG = """
[plugins.grps.dag]
type = "sequential"
name = "twice_simple"
nodes = [
  { name = "first", type = "model", model = "simple-1" },
  { name = "second", type = "model", model = "simple" },
]
"""
ROW = list(range(16))


@pytest.fixture(scope="module")
def dag_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("grps_dag")
    repository = make_repository(base / "models", extra=())
    config = base / "config.toml"
    config.write_text(DAG)
    with ServerProcess("--model-repository", str(repository), "--config", str(config)) as server:
        yield server


def _gtensors(first: list[int], second: list[int]) -> dict:
    return {
        "gtensors": {
            "tensors": [
                {"name": "INPUT0", "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": first},
                {"name": "INPUT1", "dtype": "DT_INT32", "shape": [1, 16], "flat_int32": second},
            ]
        }
    }


def _outputs(body: dict) -> dict[str, list[int]]:
    return {t["name"]: t["flat_int32"] for t in body["gtensors"]["tensors"]}


def test_rest_predict_without_a_model_runs_the_dag(dag_server: ServerProcess) -> None:
    status, body = call_json(dag_server, "POST", PREDICT, _gtensors(ROW, [3] * 16))
    assert status == 200, body
    assert _outputs(body) == {"OUTPUT0": [2 * i for i in ROW], "OUTPUT1": [6] * 16}


def test_a_named_model_still_runs_alone(dag_server: ServerProcess) -> None:
    status, body = call_json(dag_server, "POST", f"{PREDICT}?model=simple", _gtensors(ROW, [3] * 16))
    assert status == 200, body
    assert _outputs(body) == {"OUTPUT0": [i + 3 for i in ROW], "OUTPUT1": [i - 3 for i in ROW]}


def test_grpc_predict_without_a_model_runs_the_dag_and_counts_each_node(dag_server: ServerProcess) -> None:
    _, before = call_json(dag_server, "GET", "/v2/models/simple/stats")
    request = GrpsMessage()
    for name, values in (("INPUT0", ROW), ("INPUT1", [1] * 16)):
        request.gtensors.tensors.append(
            GenericTensor(name=name, dtype=grps_pb2.DT_INT32, shape=[1, 16], flat_int32=values)
        )
    with grpc.insecure_channel(dag_server.grpc_url) as channel:
        reply = grps_pb2_grpc.GrpsServiceStub(channel).Predict(request)
    assert reply.status == Status(code=200, msg="OK", status=Status.SUCCESS), reply.status
    outputs = {t.name: list(t.flat_int32) for t in reply.gtensors.tensors}
    assert outputs == {"OUTPUT0": [2 * i for i in ROW], "OUTPUT1": [2] * 16}
    _, after = call_json(dag_server, "GET", "/v2/models/simple/stats")
    counted = after["model_stats"][0]["inference_count"] - before["model_stats"][0]["inference_count"]
    assert counted == 2


def test_a_bad_request_to_the_dag_is_a_grps_400(dag_server: ServerProcess) -> None:
    status, body = call_json(dag_server, "POST", PREDICT, _gtensors([1, 2], [3] * 16))
    assert status == 400 and body["status"]["status"] == "FAILURE", body
    assert "INPUT0" in body["status"]["msg"]


def test_streaming_the_dag_is_refused_clearly(dag_server: ServerProcess) -> None:
    status, body = call_json(dag_server, "POST", f"{PREDICT}?streaming=true", _gtensors(ROW, ROW))
    assert status == 400, body
    assert "DAG" in body["status"]["msg"]


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"type": "parallel", "nodes": [{"model": "simple"}]}, "sequential"),
        ({"nodes": []}, "1..256"),
        ({"nodes": [{"model": "simple", "type": "python"}]}, "node 0"),
        ({"nodes": [{"name": "n"}]}, "model must name"),
        ({"nodes": [{"model": "simple"}], "extra": 1}, "unknown option"),
    ],
)
def test_a_bad_dag_table_is_refused_at_start_up(table: dict, words: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        GrpsOptions.from_mapping({"dag": table})
    assert words in str(raised.value)


def test_the_dag_table_reads_like_grps_inference_yml() -> None:
    options = GrpsOptions.from_mapping(
        {
            "dag": {
                "type": "sequential",
                "name": "d",
                "nodes": [
                    {"name": "a", "type": "model", "model": "simple-1"},
                    {"name": "b", "type": "model", "model": "identity_fp32"},
                ],
            }
        }
    )
    assert options.dag is not None and options.dag.name == "d"
    assert [(n.name, n.model, n.version) for n in options.dag.nodes] == [
        ("a", "simple", "1"),
        ("b", "identity_fp32", ""),
    ]


#: A DAG of two models: `simple`, then `simple_ensemble` (simple twice) fed by its outputs.
MIXED_DAG = DAG.replace('name = "twice_simple"', 'name = "mixed"').replace(
    '{ name = "second", type = "model", model = "simple" }',
    '{ name = "second", type = "model", model = "simple_ensemble" }',
)


def test_a_key_limited_to_models_runs_the_dag_only_when_it_allows_every_model(tmp_path) -> None:
    import hashlib
    import shutil

    from tests.conftest import MODEL_REPOSITORY

    keys = tmp_path / "keys.toml"
    keys.write_text("".join(
        f'[[keys]]\nname = "{name}"\nsha256 = "{hashlib.sha256(name.encode()).hexdigest()}"\n'
        f'categories = ["inference"]\nmodels = {models}\n'
        for name, models in (("first-only", '["simple"]'), ("both", '["simple", "simple_ensemble"]'))
    ))  # fmt: skip
    config = tmp_path / "config.toml"
    config.write_text(MIXED_DAG)
    repository = make_repository(tmp_path / "models", extra=())
    shutil.copytree(MODEL_REPOSITORY / "simple_ensemble", repository / "simple_ensemble")
    with ServerProcess("--model-repository", str(repository), "--config", str(config),
                       "--api-keys-file", str(keys)) as server:  # fmt: skip
        answers = {
            key: call_json(
                server, "POST", PREDICT, _gtensors(ROW, [3] * 16), headers={"Authorization": f"Bearer {key}"}
            )
            for key in ("first-only", "both")
        }
    status, body = answers["both"]
    assert status == 200, body  # simple: (i + 3, i - 3); then simple_ensemble doubles both
    assert _outputs(body) == {"OUTPUT0": [2 * (i + 3) for i in ROW], "OUTPUT1": [2 * (i - 3) for i in ROW]}
    status, body = answers["first-only"]  # its first model is allowed: the second still refuses the DAG
    assert (status, body["status"]["msg"]) == (
        403,
        "API key 'first-only' may not use model 'simple_ensemble'",
    )
