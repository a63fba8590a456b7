"""Triton's schedule_policy extension under load, with the real clients: a busy model serves
the higher ``priority`` first, over HTTP (request parameters) and gRPC (``InferParameter``).

``busy`` runs one request at a time (one instance, ``max_batch_size: 1``) for
1 s each and answers ``ORDER``: the how-manieth call it was. While request 0
runs, three requests of level 2 queue, then one of level 1: it runs second.
tritonclient.grpc runs in a subprocess (``grpc_client``): its protos clash with
ours in one process.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from modelplatform.testing import ServerProcess
from tests.plugins.repository.helpers import grpc_client

CONFIG = """
name: "busy"
backend: "python"
max_batch_size: 1
input [ { name: "ID" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "ORDER" data_type: TYPE_INT32 dims: [ 1 ] } ]
dynamic_batching {
  priority_levels: 2
  default_priority_level: 2
  priority_queue_policy {
    key: 1
    value: { max_queue_size: 2 }
  }
}
"""

MODEL = """
import asyncio

import numpy as np


class Model:
    calls = 0

    async def infer(self, inputs):
        Model.calls += 1
        order = Model.calls
        await asyncio.sleep(1.0)
        return {"ORDER": np.full(inputs["ID"].shape, order, dtype=np.int32)}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("repository")
    (root / "busy" / "1").mkdir(parents=True)
    (root / "busy" / "config.pbtxt").write_text(CONFIG)
    (root / "busy" / "1" / "model.py").write_text(MODEL)
    with ServerProcess("--model-repository", str(root)) as process:
        yield process


def _http_call(server, ident: int, priority: int, found: dict[int, object]) -> None:
    with httpclient.InferenceServerClient(server.http_url, network_timeout=60) as client:
        tensor = httpclient.InferInput("ID", [1, 1], "INT32")
        tensor.set_data_from_numpy(np.array([[ident]], dtype=np.int32))
        try:
            result = client.infer("busy", [tensor], priority=priority)
            found[ident] = int(result.as_numpy("ORDER")[0, 0])
        except InferenceServerException as error:
            found[ident] = str(error)


def test_higher_priority_runs_first_over_http(server):
    found: dict[int, object] = {}
    plan = [(0, 0), (1, 2), (2, 0), (3, 2), (4, 1)]  # (id, priority): 0 is the default level, 2
    threads = []
    for ident, priority in plan:
        thread = threading.Thread(target=_http_call, args=(server, ident, priority, found))
        thread.start()
        threads.append(thread)
        time.sleep(0.1)  # into the queue while request 0 runs
    for thread in threads:
        thread.join(60)
    first = found[0]
    assert isinstance(first, int)
    assert found[4] == first + 1  # level 1, queued last, runs next
    assert {found[i] for i in (1, 2, 3)} == {first + 2, first + 3, first + 4}


def test_higher_priority_runs_first_over_grpc(server):
    orders = grpc_client(
        server.grpc_url,
        """
        import threading, time
        import numpy as np
        found, done = {}, threading.Semaphore(0)

        def call(ident, priority):
            tensor = grpcclient.InferInput("ID", [1, 1], "INT32")
            tensor.set_data_from_numpy(np.array([[ident]], dtype=np.int32))

            def answered(result, error):
                found[ident] = str(error) if error else int(result.as_numpy("ORDER")[0, 0])
                done.release()

            client.async_infer("busy", [tensor], answered, priority=priority)

        for ident, priority in [(0, 0), (1, 0), (2, 2), (3, 1)]:
            call(ident, priority)
            time.sleep(0.1)
        for _ in range(4):
            done.acquire(timeout=60)
        result = {str(k): v for k, v in found.items()}
        """,
    )
    first = orders["0"]
    assert isinstance(first, int)
    assert orders["3"] == first + 1  # level 1, queued last, runs next
    assert {orders["1"], orders["2"]} == {first + 2, first + 3}


def test_a_full_level_is_refused_while_the_other_level_still_queues(server):
    found: dict[int, object] = {}
    plan = [(0, 0), (1, 1), (2, 1), (3, 1), (4, 2)]  # level 1 holds two
    threads = []
    for ident, priority in plan:
        thread = threading.Thread(target=_http_call, args=(server, ident, priority, found))
        thread.start()
        threads.append(thread)
        time.sleep(0.1)
    for thread in threads:
        thread.join(60)
    assert "queue is full" in str(found[3])
    assert all(isinstance(found[i], int) for i in (0, 1, 2, 4))
    assert max(found[1], found[2]) < found[4]  # type: ignore[operator]  # ints, checked above
