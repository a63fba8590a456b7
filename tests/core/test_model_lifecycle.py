"""Model lifecycle (issue 4): one state machine per model, no dropped requests.

Runs the full server in process with a small test backend whose load can be
slow or fail (set through config parameters) and which counts its loads.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from modelplatform import (
    Backend,
    ExecuteResult,
    InferenceRequest,
    InferenceResponse,
    ModelPlatformError,
    Settings,
    Tensor,
    hookimpl,
)
from modelplatform.models import LoadOverride, ModelState
from modelplatform.models.polling import RepositoryPoller
from modelplatform.testing import InProcessServer, free_port

LOADS: Counter[str] = Counter()
UNLOADS: Counter[str] = Counter()


class LifecycleBackend(Backend):
    """B = A * factor; ``load_delay`` (seconds, blocking) and ``fail`` come from the config."""

    kind: ClassVar[str] = "lifecycle"

    async def load(self) -> None:
        params = self.config.parameters
        await asyncio.to_thread(time.sleep, float(params.get("load_delay", "0")))
        if params.get("fail"):
            raise RuntimeError(params["fail"])
        self.factor = float(params.get("factor", "2"))
        LOADS[self.config.name] += 1

    async def unload(self) -> None:
        UNLOADS[self.config.name] += 1

    async def execute(self, batch: Sequence[InferenceRequest]) -> ExecuteResult:
        await asyncio.sleep(0.002)  # stay in flight across a swap
        return [
            InferenceResponse(r.model_name, "", [Tensor.from_array("B", r.arrays()["A"] * self.factor)])
            for r in batch
        ]


class LifecyclePlugin:
    @staticmethod
    @hookimpl
    def register_backends(settings: Settings) -> list[type[Backend]]:
        return [LifecycleBackend]


def _config(name: str, **params: str) -> str:
    lines = "".join(
        f' parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}' for k, v in params.items()
    )
    return (
        f'name: "{name}" backend: "lifecycle" max_batch_size: 0'
        ' input [ { name: "A" data_type: TYPE_FP32 dims: [ -1 ] } ]'
        f' output [ {{ name: "B" data_type: TYPE_FP32 dims: [ -1 ] }} ]{lines}\n'
    )


def write_model(root: Path, name: str, versions: Sequence[int] = (1,), **params: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(_config(name, **params))
    for version in versions:
        (folder / str(version)).mkdir(exist_ok=True)
        (folder / str(version) / "weights.txt").write_text(f"v{version}")
    return folder


def settings(root: Path, **changes: object) -> Settings:
    base = Settings(
        model_repository=root,
        host="127.0.0.1",
        http_port=free_port(),
        grpc_port=free_port(),
        plugins=("python",),
    )
    return Settings(**{**{f: getattr(base, f) for f in base.__slots__}, **changes})


def request(name: str) -> InferenceRequest:
    return InferenceRequest(name, [Tensor.from_array("A", np.ones(2, np.float32))])


@pytest.fixture
def repo(tmp_path):
    LOADS.clear()
    UNLOADS.clear()
    return tmp_path


async def test_concurrent_loads_load_once(repo):
    write_model(repo, "m", load_delay="0.2")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        assert LOADS["m"] == 1
        await asyncio.gather(*(models.load("m") for _ in range(8)))
        assert LOADS["m"] == 1  # unchanged and READY: a no-op
        await models.unload("m")
        await asyncio.gather(*(models.load("m") for _ in range(8)))
        assert LOADS["m"] == 2 and models.get("m").ready


async def test_load_unload_race_ends_in_the_last_requests_state(repo):
    write_model(repo, "m", load_delay="0.1")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        await asyncio.gather(models.unload("m"), models.load("m"), models.unload("m"))
        assert not models.is_ready("m")
        assert [(e.state, e.reason) for e in models.index()] == [("UNAVAILABLE", "unloaded")]
        await asyncio.gather(models.load("m"), models.unload("m"), models.load("m"))
        assert models.is_ready("m")
        assert LOADS["m"] == UNLOADS["m"] + 1  # every load was matched by an unload


async def test_a_slow_load_never_blocks_the_loop(repo):
    write_model(repo, "fast")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        write_model(repo, "slow", load_delay="1.0")
        load = asyncio.ensure_future(server.running.models.load("slow"))
        gaps, last = [], time.perf_counter()
        while not load.done():
            await asyncio.sleep(0.01)
            response = await server.context.dataplane.inference.infer(request("fast"))
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
        await load
        assert response.outputs[0].data.tolist() == [2.0, 2.0]
        assert len(gaps) > 20 and max(gaps) < 0.1
        entry = [e for e in server.running.models.index() if e.name == "slow"]
        assert entry[0].state == "READY"


async def test_loading_versions_show_in_the_index(repo):
    write_model(repo, "m", load_delay="0.5")
    async with InProcessServer(settings(repo, load_models=("none",)), [LifecyclePlugin]) as server:
        models = server.running.models
        assert [e.name for e in models.index() if e.name == "m"] == ["m"]
        assert models.index()[-1].state == ""  # never loaded: name only
        load = asyncio.ensure_future(models.load("m"))
        await asyncio.sleep(0.2)
        assert [(e.name, e.version, e.state) for e in models.index() if e.name == "m"] == [
            ("m", "1", "LOADING")
        ]
        await load


async def test_reload_under_load_drops_no_request(repo):
    folder = write_model(repo, "m", factor="2")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        dataplane, models = server.context.dataplane, server.running.models
        stop = asyncio.Event()
        results: list[float] = []

        async def hammer() -> None:
            while not stop.is_set():
                response = await dataplane.inference.infer(request("m"))
                results.append(float(response.outputs[0].data[0]))

        clients = [asyncio.ensure_future(hammer()) for _ in range(8)]
        for factor in ("3", "4", "5"):
            await asyncio.sleep(0.05)
            (folder / "config.pbtxt").write_text(_config("m", factor=factor, load_delay="0.05"))
            await models.load("m")
        await asyncio.sleep(0.05)
        stop.set()
        await asyncio.gather(*clients)  # any error raised by infer fails the test here
        assert {2.0, 5.0} <= set(results) and len(results) > 100
        assert LOADS["m"] == 4 and UNLOADS["m"] == 3


async def test_failed_reload_keeps_the_previous_version_serving(repo):
    folder = write_model(repo, "m")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models, dataplane = server.running.models, server.context.dataplane
        (folder / "config.pbtxt").write_text(_config("m", fail="out of memory"))
        with pytest.raises(ModelPlatformError, match="out of memory"):
            await models.load("m")
        assert (await dataplane.inference.infer(request("m"))).outputs[0].data.tolist() == [2.0, 2.0]
        [entry] = [e for e in models.index() if e.name == "m"]
        assert entry.state == "READY" and "out of memory" in entry.reason
        assert dataplane.health.ready()
        (folder / "config.pbtxt").write_text("this is { not a config")
        with pytest.raises(ModelPlatformError, match="config.pbtxt"):
            await models.load("m")
        assert models.is_ready("m")
        (folder / "config.pbtxt").write_text(_config("m", factor="3"))
        await models.load("m")
        assert (await dataplane.inference.infer(request("m"))).outputs[0].data.tolist() == [3.0, 3.0]
        assert [e.reason for e in models.index() if e.name == "m"] == [""]


async def test_first_load_failure_shows_the_reason_and_strictness(repo):
    write_model(repo, "good")
    write_model(repo, "bad", fail="no such weights")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        entries = {e.name: e for e in server.running.models.index()}
        assert entries["bad"].state == "UNAVAILABLE" and "no such weights" in entries["bad"].reason
        assert not server.context.dataplane.health.ready()  # strict: a start-up model failed
    async with InProcessServer(settings(repo, strict_readiness=False), [LifecyclePlugin]) as server:
        assert server.context.dataplane.health.ready()  # lenient: ready once up


async def test_an_extra_load_does_not_flap_readiness(repo):
    write_model(repo, "base")
    async with InProcessServer(settings(repo, load_models=("base",)), [LifecyclePlugin]) as server:
        dataplane, models = server.context.dataplane, server.running.models
        write_model(repo, "extra", load_delay="0.3")
        load = asyncio.ensure_future(models.load("extra"))
        await asyncio.sleep(0.1)
        assert dataplane.health.ready()
        await load
        write_model(repo, "broken", fail="nope")
        with pytest.raises(ModelPlatformError):
            await models.load("broken")
        assert dataplane.health.ready()


async def test_config_override_then_back_to_the_repository_config(repo):
    write_model(repo, "m")
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models, dataplane = server.running.models, server.context.dataplane
        override = LoadOverride.from_json(
            '{"parameters": {"factor": {"string_value": "10"}},'
            ' "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [-1]}],'
            ' "output": [{"name": "B", "data_type": "TYPE_FP32", "dims": [-1]}]}'
        )
        await models.load("m", override)
        assert (await dataplane.inference.infer(request("m"))).outputs[0].data.tolist() == [10.0, 10.0]
        assert models.get("m").config.backend == "lifecycle"  # kept from the folder
        await models.load("m")
        assert (await dataplane.inference.infer(request("m"))).outputs[0].data.tolist() == [2.0, 2.0]


async def test_a_temporary_model_folder_is_removed_after_unload(repo, tmp_path_factory):
    upload = tmp_path_factory.mktemp("upload")
    (upload / "3").mkdir()
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        config = {
            "backend": "lifecycle",
            "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [-1]}],
            "output": [{"name": "B", "data_type": "TYPE_FP32", "dims": [-1]}],
        }
        await models.load("new", LoadOverride(config=config, model_dir=upload, temporary=True))
        assert models.get("new").version == 3 and upload.is_dir()
        await models.unload("new")
        assert not upload.exists()


async def test_version_policy_latest_all_specific(repo):
    folder = write_model(repo, "m", versions=(1, 2, 3))
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        models = server.running.models
        assert [v.version for v in models.versions("m")] == [3]
        for policy, expected in (
            ("all { }", [1, 2, 3]),
            ("specific { versions: [1, 3] }", [1, 3]),
            ("latest { num_versions: 2 }", [2, 3]),
        ):
            (folder / "config.pbtxt").write_text(_config("m") + f"version_policy {{ {policy} }}\n")
            await models.load("m")
            assert [v.version for v in models.versions("m") if v.ready] == expected


async def test_poll_loads_only_settled_folders_and_unloads_removed_ones(repo, tmp_path_factory):
    write_model(repo, "kept")
    async with InProcessServer(
        settings(repo, model_control_mode="poll", repository_poll_secs=0.0), [LifecyclePlugin]
    ) as server:
        models = server.running.models
        poller = RepositoryPoller(models, repo, 1.0)
        await poller.poll_once()
        folder = write_model(repo, "new")
        await poller.poll_once()
        assert not models.is_ready("new")  # seen once: may still be copying
        (folder / "1" / "weights.txt").write_text("still copying, longer now")
        await poller.poll_once()
        assert not models.is_ready("new")  # changed since the last scan
        await poller.poll_once()
        assert models.is_ready("new") and LOADS["new"] == 1
        await poller.poll_once()
        assert LOADS["new"] == 1 and LOADS["kept"] == 1  # nothing changed, nothing reloaded
        write_model(repo, "new", versions=(2,))
        await poller.poll_once()
        await poller.poll_once()
        assert models.get("new").version == 2
        shutil.rmtree(folder)
        await poller.poll_once()
        states = {(e.name, e.state) for e in models.index()}
        assert ("new", ModelState.UNAVAILABLE.value) in states and models.is_ready("kept")


@pytest.mark.parametrize("name", ["..", "../other", "a/b", ".hidden", "", "a\\b"])
async def test_names_that_leave_the_repository_are_refused(repo, name):
    async with InProcessServer(settings(repo), [LifecyclePlugin]) as server:
        with pytest.raises(ModelPlatformError, match="not a valid model name"):
            await server.running.models.load(name)
        with pytest.raises(ModelPlatformError, match="not a valid model name"):
            await server.running.models.unload(name)
