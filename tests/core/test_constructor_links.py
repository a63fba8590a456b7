"""Back-references come through constructors: the manager's replicator, the dataplane's siblings."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from modelplatform import DataPlane
from modelplatform.models import LoadOverride, ModelManager
from modelplatform.models.backend import BackendRegistry
from modelplatform.models.stats import ModelStats
from modelplatform.testing import FunctionBackend, function_model

CONFIG = """
name: "twice"
backend: "function"
input [ { name: "A" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "B" data_type: TYPE_FP32 dims: [ -1 ] } ]
"""


class RecordingReplicator:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, LoadOverride | None, list[Path]]] = []

    async def sibling_copies(self, override: LoadOverride) -> list[Path]:
        return []

    async def replicate(self, operation, name, override, copies) -> None:
        self.calls.append((operation, name, override, copies))


class CountingSiblings:
    async def statistics(self, name: str, version: str) -> list[list[ModelStats]]:
        return [[ModelStats(name, "1", inference_count=n)] for n in (2, 3)]


def _repository(tmp_path: Path) -> Path:
    function_model("twice", lambda inputs: {"B": inputs["A"] * np.float32(2)})
    (tmp_path / "twice" / "1").mkdir(parents=True)
    (tmp_path / "twice" / "config.pbtxt").write_text(CONFIG)
    return tmp_path


async def test_the_manager_relays_api_operations_to_the_replicator_it_was_given(tmp_path):
    replicator = RecordingReplicator()
    backends = BackendRegistry([FunctionBackend])
    models = ModelManager(_repository(tmp_path), backends, replicator=replicator)
    await models.load("twice", replicate=False)  # start-up and poll loads stay local
    assert replicator.calls == []
    override = LoadOverride(config={"max_batch_size": 0})
    await models.load("twice", override)
    await models.unload("twice")
    assert replicator.calls == [("load", "twice", override, []), ("unload", "twice", None, [])]


async def test_the_dataplane_sums_the_statistics_of_the_siblings_it_was_given(tmp_path):
    models = ModelManager(_repository(tmp_path), BackendRegistry([FunctionBackend]))
    await models.load("twice")
    alone = DataPlane.of(models, "s", "v", [])
    joined = DataPlane.of(models, "s", "v", [], siblings=CountingSiblings())
    assert [s.inference_count for s in await alone.observation.statistics("twice")] == [0]
    assert [s.inference_count for s in await joined.observation.statistics("twice")] == [5]
    await models.shutdown()
