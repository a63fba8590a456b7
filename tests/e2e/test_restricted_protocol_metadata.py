"""Issue 29, point 7: a restricted gRPC protocol reads only Triton's ``triton-grpc-protocol-<key>``.

Written as a new user would: the issue's exact flags, tritonclient over gRPC and
HTTP. Triton 2.51 answers UNAVAILABLE to a bare ``admin-key`` metadata; HTTP's
restricted APIs read the bare header (Triton's ``--http-restricted-api``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from modelplatform.testing import ServerProcess

from ..conftest import MODEL_REPOSITORY
from .access_clients import request, triton_grpc

REFUSED = "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with ServerProcess(
        "--model-repository", str(MODEL_REPOSITORY), "--load-model", "simple",
        "--grpc-restricted-protocol=model-repository,statistics:admin-key=secret",
        "--http-restricted-api=model-repository,statistics:admin-key=secret",
    ) as process:  # fmt: skip
        yield process


def test_grpc_index_and_statistics_need_tritons_metadata_name(server: ServerProcess) -> None:
    result = triton_grpc(
        server.grpc_url,
        """
        bare = {"admin-key": "secret"}
        triton = {"triton-grpc-protocol-admin-key": "secret"}
        result = {
            "index_none": outcome(lambda: client.get_model_repository_index()),
            "index_bare": outcome(lambda: client.get_model_repository_index(headers=bare)),
            "index_triton": outcome(lambda: client.get_model_repository_index(headers=triton)),
            "stats_bare": outcome(lambda: client.get_inference_statistics("simple", headers=bare)),
            "stats_wrong": outcome(lambda: client.get_inference_statistics(
                "simple", headers={"triton-grpc-protocol-admin-key": "nope"})),
            "stats_triton": outcome(lambda: client.get_inference_statistics("simple", headers=triton)),
            "infer": outcome(lambda: client.infer("simple", simple_inputs())),
        }
    """,
    )
    refused = ["StatusCode.UNAVAILABLE", REFUSED]
    assert result["index_none"] == refused
    assert result["index_bare"] == refused
    assert result["stats_bare"] == refused
    assert result["stats_wrong"] == refused
    assert result["index_triton"] == "OK"
    assert result["stats_triton"] == "OK"
    assert result["infer"] == "OK"  # inference is not in the restricted group


def test_http_keeps_the_bare_header(server: ServerProcess) -> None:
    stats = "/v2/models/simple/stats"
    assert request(server.http_port, "GET", stats)[0] == 403
    assert request(server.http_port, "GET", stats, headers={"admin-key": "secret"})[0] == 200
    prefixed = {"triton-grpc-protocol-admin-key": "secret"}
    assert request(server.http_port, "GET", stats, headers=prefixed)[0] == 403
    assert (
        request(server.http_port, "POST", "/v2/repository/index", headers={"admin-key": "secret"})[0] == 200
    )
